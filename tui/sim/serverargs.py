"""The `server_args=` fields and the `/server_info` answer of the simulated launch."""

from __future__ import annotations

from tui.sim.engine import Engine
from tui.sim.memory import MEM_FRACTION_STATIC, RankMemory
from tui.sim.params import MODEL, SimParams, default_max_bs

HOST = "127.0.0.1"


def url_host(host: str) -> str:
    """The host as uvicorn writes it in a URL: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def server_args_fields(p: SimParams) -> list[tuple[str, object]]:
    """A realistic slice of SGLang's ServerArgs (the real line has hundreds of fields)."""
    spec = p.speculative
    return [
        ("model_path", MODEL), ("tokenizer_path", MODEL), ("tokenizer_mode", "auto"), ("tokenizer_worker_num", 1),
        ("skip_tokenizer_init", False), ("load_format", "auto"), ("model_loader_extra_config", "{}"),
        ("trust_remote_code", False), ("context_length", None), ("is_embedding", False), ("revision", None),
        ("model_impl", "auto"), ("host", p.host), ("port", p.port), ("skip_server_warmup", False), ("warmups", None),
        ("nccl_port", None), ("dtype", "auto"), ("quantization", None), ("kv_cache_dtype", "auto"),
        ("mem_fraction_static", p.mem_fraction_static or MEM_FRACTION_STATIC), ("max_running_requests", 48 if spec else None), ("max_total_tokens", None),
        ("chunked_prefill_size", 8192), ("max_prefill_tokens", 16384), ("schedule_policy", "fcfs"),
        ("schedule_conservativeness", 1.0), ("page_size", 1), ("device", "cuda"), ("tp_size", p.tp),
        ("pp_size", 1), ("stream_interval", 1), ("stream_output", False), ("random_seed", 913207644),
        ("watchdog_timeout", 300), ("dist_timeout", None), ("download_dir", None), ("base_gpu_id", 0),
        ("gpu_id_step", 1), ("log_level", "info"), ("log_level_http", None), ("log_requests", False),
        ("show_time_cost", False), ("enable_metrics", True), ("decode_log_interval", 40), ("api_key", None),
        ("served_model_name", MODEL), ("dp_size", 1), ("load_balance_method", "round_robin"),
        ("dist_init_addr", p.dist_init_addr), ("nnodes", p.nnodes), ("node_rank", p.node_rank), ("attention_backend", "fa3"),
        ("sampling_backend", "flashinfer"), ("speculative_algorithm", spec),
        ("speculative_draft_model_path", p.draft_model), ("speculative_num_steps", 3 if spec else None),
        ("speculative_eagle_topk", 1 if spec else None), ("speculative_num_draft_tokens", 4 if spec else None),
        ("ep_size", 1), ("enable_dp_attention", False), ("disable_cuda_graph", False),
        ("cuda_graph_max_bs", p.cuda_graph_max_bs or default_max_bs(p)), ("disable_overlap_schedule", bool(spec) and p.fmt == "0.5.9"),
        ("enable_torch_compile", False), ("enable_mixed_chunk", False),
    ] + ([("disaggregation_mode", p.disaggregation_mode), ("disaggregation_bootstrap_port", p.bootstrap_port)]
         if p.disaggregation_mode else [])  # fmt: skip


GRAPH_PHASES = ("prefill", "decode", "target_verify", "draft_prefill", "draft_decode", "draft_extend")


def startup_time_answer(
    load: float, kv: float, sched: float, graphs: dict[str, float], tok: float
) -> dict[str, object]:
    """SGLang 0.5.23's `startup_time` (engine.py `_set_startup_time`): the figures of `Engine startup timings`."""
    return {"load_weight": round(load, 4), "kv_cache_allocation": round(kv, 4), "scheduler_e2e": round(sched, 4),
            "cuda_graph": {n: round(graphs.get(n, 0.0), 4) for n in GRAPH_PHASES},
            "tokenizer_e2e": round(tok, 4)}  # fmt: skip


def server_info(p: SimParams, engine: Engine, startup_time: dict[str, object] | None = None) -> dict[str, object]:
    """What /server_info answers: the resolved args, token capacity, version and per-scheduler state; 0.5.23 adds
    `startup_time` (None until the schedulers are up, as in SGLang) and `frontend`."""
    mem = RankMemory(p.tp, p.speculative is not None)
    state: dict[str, object] = {
        "last_gen_throughput": round(engine.last_throughput, 2),
        "memory_usage": {
            "weight": round(mem.weights + mem.draft_weights, 2),
            "kvcache": round(mem.kv_total, 2),
            "token_capacity": mem.tokens,
            "graph": 3.34,
        },  # fmt: skip
    }
    if p.speculative:
        state["avg_spec_accept_length"] = engine.last_accept
    info: dict[str, object] = dict(server_args_fields(p))
    info.update({"max_total_num_tokens": mem.tokens, "max_req_input_len": 131066, "version": "0.5.24.dev0" if p.fmt == "main" else p.fmt,
                 "internal_states": [state]})  # fmt: skip
    if p.fmt in ("0.5.23", "main"):
        info.update({"startup_time": startup_time, "frontend": "python"})
    return info
