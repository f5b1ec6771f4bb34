"""`/metrics` of the simulated server: Prometheus text with SGLang's metric names and labels (0.5.23).

SGLang sets the speculative gauges from its decode-log window (every 40 decode iterations), and to 0 when
the server runs without speculative decoding; the simulator does the same.
"""

from __future__ import annotations

from tui.sim.engine import Engine
from tui.sim.params import MODEL, SimParams


def _labels(p: SimParams) -> str:
    return f'engine_type="unified",model_name="{MODEL}",moe_ep_rank="0",pp_rank="0",tp_rank="0"'


def prometheus_text(p: SimParams, engine: Engine, running: int, finished: int, aborted: int) -> str:
    """The exposition text: gauges first (scheduler), then counters (tokenizer), as SGLang lists them."""
    labels = _labels(p)
    accept = engine.last_accept if p.speculative and engine.last_accept is not None else 0.0
    rows: list[tuple[str, str, str, str, float]] = [
        ("sglang:num_running_reqs", "gauge", "The number of running requests.", labels, float(running)),
        ("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", labels, 0.0),
        ("sglang:gen_throughput", "gauge", "The generation throughput (token/s).", labels, engine.last_throughput),
        ("sglang:spec_accept_length", "gauge",
         "Mean acceptance length of speculative decoding (accepted drafts + bonus token per forward).", labels, accept),
        ("sglang:spec_accept_rate", "gauge", "Speculative acceptance rate (`accepted drafts / proposed drafts` in batch).",
         labels, (accept - 1) / 3 if accept else 0.0),
        ("sglang:spec_num_draft_tokens", "gauge", "The number of draft tokens per verify step.", labels,
         4.0 if p.speculative else 0.0),
        ("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.",
         labels + ',is_streaming="true"', float(engine.generation_tokens)),
        ("sglang:spec_verify_calls_total", "counter", "Number of speculative decoding verification calls.", labels,
         float(engine.spec_verify_calls)),
        ("sglang:num_requests_total", "counter", "Number of requests processed.", labels + ',is_streaming="true"',
         float(finished)),
        ("sglang:num_aborted_requests_total", "counter", "Number of requests aborted.", labels, float(aborted)),
    ]  # fmt: skip
    out: list[str] = []
    for name, kind, doc, lab, value in rows:
        base = name[: -len("_total")] if kind == "counter" else name
        out.append(f"# HELP {base} {doc}")
        out.append(f"# TYPE {base} {kind}")
        out.append(f"{name}{{{lab}}} {value!r}")
    return "\n".join(out) + "\n"
