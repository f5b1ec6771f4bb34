"""The kinds of text the third round of real logs showed (issue 33), each in short lines of its kind: 2026 draft capture
steps, a scheduler exception header cut mid-word, decode lines with an accept rate alone, newer KV sizing lines, the
TP size only where the text states it, an NCCL WARN above a generic traceback, host memory exhaustion; and SGLang
main's new lines (sglang-startup.md §12). Through the real parser and reducer, and `replay --json`'s object.

Line shapes are SGLang's (its format strings and the 2026 logs §12 quotes), the kernel's (`Out of memory: Killed
process …`), NCCL's (`host:pid:tid [dev] file.cc:N NCCL WARN …`) and the llm-d launcher's, cut to a few lines each.
"""

from __future__ import annotations

import io

import pytest

from tui.commands.replay import replay_stream
from tui.core.events import Event, Milestone, ServerArgs, Tick
from tui.core.explain import evidence
from tui.core.logparse import LogParser
from tui.core.readiness import reduce
from tui.core.report import format_report, to_json
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line

DAY = "2026-03-01"


def ts(sec: int, rank: str | None = None) -> str:
    r = f" {rank}" if rank else ""
    return f"[{DAY} 10:{sec // 60:02d}:{sec % 60:02d}{r}]"


def replay(text: str) -> Readiness:
    return replay_stream(io.BytesIO(text.encode()), "round3")


def js(text: str) -> dict:
    return to_json(replay(text))


def events(text: str) -> list[Event]:
    parser = LogParser()
    return parser.feed(text.encode()) + parser.flush()


LOADED = (
    f"{ts(0, 'TP0')} Load weight end. elapsed=3.20 s, type=LlamaForCausalLM, avail mem=60.00 GB, mem usage=10.00 GB.\n"
)


# ---------------------------------------------------------------------------------------------- the kinds


def test_draft_capture_steps_are_the_cuda_graph_phase_and_speculative() -> None:
    steps = "".join(f"{ts(10 + i, 'TP0')} Capture draft extend cuda graph begin (step {i})\n" for i in (1, 2, 3))
    for text in (steps, LOADED + steps):  # a window of the steps alone, and after the target's weights
        got = js(text)
        assert got["phase"] == "cuda_graph" and got["speculative"] == "unknown", text
    s = replay(LOADED + steps)
    assert [(span.model, span.name) for span in s.timeline if span.model == "draft"] == [("draft", "draft extend")]


@pytest.mark.parametrize("cut", ["Scheduler hit an excep", "Scheduler hit an", "Scheduler hit a"])
def test_a_scheduler_exception_header_cut_at_the_end_is_the_failure(cut: str) -> None:
    for end in ("", "\n"):
        got = js(LOADED + f"{ts(5, 'TP0')} {cut}{end}")
        assert got["phase"] == "failed" and got["error"]["kind"] == "exception"
        assert got["error"]["line"] == f"{ts(5, 'TP0')} {cut}"


def test_words_that_only_share_the_verb_are_no_failure() -> None:
    got = js(LOADED + f"{ts(5, 'TP0')} Cache hit a new high: 93%\n{ts(6, 'TP0')} Scheduler hit an obstacle\n")
    assert got["phase"] == "loading_weights" and got["error"] is None


def test_decode_lines_with_accept_rate_alone_say_speculative_unknown() -> None:
    rate_only = (f"{ts(1, 'TP0')} Decode batch, #running-req: 1, #token: 100, token usage: 0.00, accept rate: 0.71, "
                 "cuda graph: True, gen throughput (token/s): 120.50, #queue-req: 0\n")  # fmt: skip
    got = js(rate_only * 3)
    assert got["speculative"] == "unknown" and got["decode"]["accept_len"] is None
    assert got["decode"]["gen_throughput"] == 120.5 and got["phase"] == "serving"
    plain = rate_only.replace("accept rate: 0.71, ", "")
    assert js(plain * 3)["speculative"] is None  # no speculative field at all: not speculative


@pytest.mark.parametrize(
    "line",
    [
        "Initialize DeepSeekV4TokenToKVPool with max_num_reqs=256 swa_size=329472 c4_size=0 c128_size=0",
        "DeepSeekV4 memory calculation: total=79.10 GB, weights=40.20 GB, kv budget=30.00 GB",
        "Mamba Cache is allocated. max_mamba_cache_size: 80, conv_state size: 0.22GB, ssm_state size: 11.39GB",
        "Hybrid SWA memory pool: full_max_total_num_tokens=879872 swa_max_total_num_tokens=219968",
        "Max concurrent requests (per dp worker) from the finalized token capacity: max_num_reqs=10.",
        "Tree cache initialized: source=default impl=UnifiedRadixCache hybrid_swa=True hybrid_ssm=False "
        "hicache_attached=False streaming_wrapped=False",
    ],
)
def test_newer_kv_sizing_lines_are_the_kv_cache_phase(line: str) -> None:
    assert js(LOADED + f"{ts(5, 'TP0')} {line}\n")["phase"] == "kv_cache"
    assert js(f"{ts(5, 'TP0')} {line}\n")["phase"] == "kv_cache"  # a window that starts at it


def test_kv_sizing_words_before_any_weight_are_not_the_kv_phase() -> None:
    """A main-process line of such wording while the arguments are resolved (before any weight) moves nothing: the
    phase only moves forward, and it would hold the launch in KV cache through its loading."""
    args = f"{ts(0)} server_args=ServerArgs(model_path='m', tp_size=1)\n"
    budget = f"{ts(1)} Memory budget for the KV cache: mem_fraction_static=0.85\n"
    assert js(args + budget + f"{ts(2)} Init torch distributed begin.\n")["phase"] == "init"
    loaded = f"{ts(3)} Load weight end. type=X, avail mem=60.00 GB, mem usage=10.00 GB.\n"
    assert js(args + loaded + budget)["phase"] == "kv_cache"


def test_kv_words_in_a_loading_warning_are_no_kv_phase() -> None:
    warn = f"{ts(2)} Using FP8 KV cache but no scaling factors provided. Defaulting to scaling factors of 1.0.\n"
    assert js(f"{ts(1, 'TP0')} Load weight begin. avail mem=70.00 GB\n" + warn)["phase"] == "loading_weights"


def test_tp_size_only_where_the_text_states_it() -> None:
    # one node's full set of ranks tells it; a slice past one node's GPUs, or a lone rank, is a lower bound only
    eight = "".join(f"{ts(1, f'TP{i}')} Load weight begin. avail mem=70.00 GB\n" for i in range(8))
    assert js(eight)["tp_size"] == 8
    sixteen = "".join(f"{ts(1, f'TP{i}')} Load weight begin. avail mem=70.00 GB\n" for i in range(16))
    s = replay(sixteen)
    assert to_json(s)["tp_size"] is None
    assert "log: tp ≥ 16: ranks TP0–TP15 seen (a lower bound: no line states the size)" in evidence(s)
    node4 = "".join(f"{ts(1, f'TP{i}')} Load weight begin. avail mem=70.00 GB\n" for i in range(24, 32))
    assert js(node4)["tp_size"] is None and "tp ≥ 32: ranks TP24–TP31 seen" in format_report(replay(node4))
    assert js(f"{ts(1, 'TP3')} Scheduler hit an exception: Traceback (most recent call last):\n")["tp_size"] is None
    # stated: server_args, NCCL's communicator size, the launch command in the log
    nccl = "node1:4242:4300 [0] NCCL INFO comm 0x5a1 rank 0 nranks 16 cudaDev 0 busId 18000 - Init COMPLETE\n"
    assert js(sixteen + nccl)["tp_size"] == 16
    command = "$ python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 \\\n    --tp 32 --nnodes 4 \\\n    --node-rank 3\n"
    assert js(command + node4)["tp_size"] == 32
    assert (
        js(
            f"sglang serve Qwen/Qwen3-8B --tp-size=2 --port 30000\n{ts(1, 'TP0')} Load weight begin. avail mem=70.00 GB\n"
        )["tp_size"]
        == 2
    )
    options = "options={'model_path': 'deepseek-ai/DeepSeek-V2-Lite', 'tp_size': 2, 'dp_size': 2}\n"
    assert (
        js(options + "Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:01<00:03,  1.12s/it]\n")[
            "tp_size"
        ]
        == 2
    )


def test_a_command_pasted_above_a_window_from_mid_run_is_no_launch() -> None:
    """A thread's paste: the command, then lines from mid-run. The command states the size; the window stays a window
    (serving by its own lines, the mid-run fact said), not a launch whose start is in view."""
    access = f'{ts(1)} INFO:     127.0.0.1:4000 - "POST /generate HTTP/1.1" 200 OK\n'
    decode = (f"{ts(2, 'TP0')} Decode batch, #running-req: 1, #token: 100, token usage: 0.00, cuda graph: True, "
              "gen throughput (token/s): 120.50, #queue-req: 0\n")  # fmt: skip
    s = replay("python3 -m sglang.launch_server --model-path m --tp 8 --port 30000\n" + access + decode)
    assert s.phase is Phase.SERVING and s.server.tp_size == 8 and s.server.model == "m"
    assert not s.launch_line and s.mid_run is not None


def test_a_sentence_that_names_the_command_states_nothing() -> None:
    for line in ("Please use sglang serve instead of python -m sglang.launch_server.",
                 "Deprecated: python -m sglang.launch_server will be removed; use sglang serve"):  # fmt: skip
        assert not [e for e in events(line + "\n") if isinstance(e, ServerArgs)], line


def test_a_command_after_the_startup_began_is_no_launch() -> None:
    """A command echoed mid-log (another worker's, a user's paste under the output) neither resets nor sizes this one."""
    s = replay(LOADED + f"{ts(3, 'TP0')} Memory pool end. avail mem=20.00 GB\npython -m sglang.launch_server --tp 4\n")
    assert s.phase is Phase.KV_CACHE and s.server.tp_size == 1 and s.launches == 0
    assert not [e for e in events(LOADED + "python -m sglang.launch_server --tp 4\n") if isinstance(e, ServerArgs)]


def test_an_nccl_warn_above_a_generic_traceback_names_the_cause() -> None:
    warn = "node1:4242:4300 [0] misc/socket.cc:50 NCCL WARN Net : Connection refused / Connection reset by peer\n"
    traceback = (f"{ts(5, 'TP0')} Scheduler hit an exception: Traceback (most recent call last):\n"
                 '  File "scheduler.py", line 3, in run_scheduler_process\n    scheduler = Scheduler(...)\n')  # fmt: skip
    got = js(LOADED + warn + traceback + "RuntimeError: init failed\n")
    assert got["error"] == {"kind": "nccl", "line": warn.rstrip("\n"), **_rest(got)}
    cut = js(LOADED + warn + traceback)  # the traceback's end cut off
    assert cut["error"]["kind"] == "nccl" and "NCCL WARN" in cut["error"]["line"]
    named = js(LOADED + warn + traceback + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert named["error"]["kind"] == "oom"  # a traceback that names its cause keeps it
    far = js(
        LOADED + warn + "".join(f"{ts(4, 'TP0')} step {i}\n" for i in range(100)) + traceback + "RuntimeError: x\n"
    )
    assert far["error"]["kind"] == "exception"  # a WARN long before says nothing of it
    assert js(LOADED + warn)["error"] is None  # a WARN alone is no failure: NCCL warns of much it gets past


def _rest(got: dict) -> dict:
    return {k: v for k, v in got["error"].items() if k not in ("kind", "line")}


@pytest.mark.parametrize(
    "line",
    [
        "OSError: [Errno 12] Cannot allocate memory",
        "[123456.789012] Out of memory: Killed process 4242 (python3) total-vm:1000kB, anon-rss:900kB",
        "[123456.789012] Memory cgroup out of memory: Killed process 4242 (sglang::schedul)",
        "[123456.700000] python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0",
    ],
)
def test_host_memory_exhaustion_is_oom_said_as_host_memory(line: str) -> None:
    tb = f'{ts(5, "TP0")} Scheduler hit an exception: Traceback (most recent call last):\n  File "x.py", line 1, in f\n'
    for text in (LOADED + tb + line + "\n", LOADED + line + "\nKilled\n"):
        s = replay(text)
        assert s.error is not None and s.error.kind == "oom" and s.error.line == line
        assert "(out of host memory)" in verdict_line(s)


def test_a_gpu_oom_is_not_said_as_host_memory() -> None:
    s = replay(LOADED + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert s.error is not None and s.error.kind == "oom" and "(out of memory)" in verdict_line(s)


# ---------------------------------------------------------------------------------------------- §12's new lines


def test_the_startup_timings_map_keys_vary_and_zero_is_not_captured() -> None:
    line = (f"{ts(74)} Engine startup timings (s): load_weight=60.00, kv_cache_allocation=0.44, scheduler_e2e=80.00, "
            "cuda_graph={target_verify=20.00, draft_decode=5.00, draft_extend=0.00}, tokenizer_e2e=85.00\n")  # fmt: skip
    (timings,) = [e for e in events(line) if isinstance(e, Milestone) and e.kind == "startup_timings"]
    fields = dict(timings.fields)
    assert fields["load_weight"] == 60.0 and fields["cuda_graph.target_verify"] == 20.0
    assert fields["cuda_graph.draft_extend"] == 0.0 and fields["cuda_graph_total"] == 25.0
    assert "draft_decode" not in fields and "decode" not in fields  # the map's keys stay in the map
    # cross-checked with the phases the log timed: loading 61 s vs 60 s agrees, capture 11 s vs 25 s does not
    log = (f"{ts(0, 'TP0')} Load weight begin. avail mem=70.00 GB\n{ts(60, 'TP0')} Load weight end. elapsed=60.00 s, "
           f"type=X, avail mem=60.00 GB, mem usage=10.00 GB.\n{ts(61, 'TP0')} Memory pool end. avail mem=20.00 GB\n"
           f"{ts(62, 'TP0')} Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB\n"
           f"{ts(72, 'TP0')} Capture cuda graph end. Time elapsed: 10.00 s. mem usage=1.00 GB. avail mem=19.00 GB.\n"
           f"{ts(73)} max_total_num_tokens=1000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
           "max_running_requests=48, context_len=4096, available_gpu_mem=19.00 GB\n"
           f"{ts(73)} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n")  # fmt: skip
    report = format_report(replay(log + line))
    assert "cuda_graph_total: SGLang 25.00 s, the log's phase 11.0 s (-56%)" in report and "load_weight:" not in report


def test_piecewise_capture_after_regular_with_staggered_rank_ends() -> None:
    text = (
        f"{ts(10, 'TP0')} Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB\n"
        f"{ts(10, 'TP1')} Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB\n"
        f"{ts(12, 'TP0')} Registering 228 cuda graph addresses\n"
        f"{ts(13, 'TP0')} Capture cuda graph end. Time elapsed: 3.00 s. mem usage=0.83 GB. avail mem=10.88 GB.\n"
        f"{ts(13, 'TP0')} Capture piecewise CUDA graph begin. avail mem=10.88 GB\n"
        f"{ts(14, 'TP1')} Capture cuda graph end. Time elapsed: 4.00 s. mem usage=0.83 GB. avail mem=10.88 GB.\n"
        "Compiling num tokens (num_tokens=20):  40%|████      | 2/5 [00:01<00:01,  1.50it/s]\n"
    )
    s = replay(text)
    assert s.phase is Phase.CUDA_GRAPH
    assert s.capture_now == "piecewise"  # TP1's late regular end does not take the capture back
    assert "log: piecewise 2/5" in evidence(s)


def test_silence_after_registering_graph_addresses_names_the_flashinfer_hang() -> None:
    text = (f"{ts(10, 'TP0')} Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB\n"
            f"{ts(12, 'TP0')} Registering 228 cuda graph addresses\n")  # fmt: skip
    s = replay(text)
    s = reduce(s, Tick(), s.updated_at + 3600.0)
    assert s.stall is not None and "known FlashInfer MLA hang" in s.stall.detail
    other = replay(text.replace("Registering 228 cuda graph addresses", "Capture cuda graph bs [1, 2, 4]"))
    other = reduce(other, Tick(), other.updated_at + 3600.0)
    assert other.stall is not None and "FlashInfer" not in other.stall.detail


def test_loads_with_no_shard_bar() -> None:
    got = js(f"{ts(0)} RDMA transfer complete: 2944 tensors, 165.72 GB, 6.064s, 218.6 Gbps\n")
    assert got["phase"] == "loading_weights" and got["shards"] is None


def test_the_502_warmup_behind_a_proxy_is_said_so() -> None:
    text = (f"{ts(0)} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
            f"{ts(1)} Initialization failed. warmup error: Traceback (most recent call last):\n"
            '  File "http_server.py", line 1, in _wait_and_warmup\n'
            "AssertionError: res=<Response [502]>, res.text=''\n")  # fmt: skip
    s = replay(text)
    assert s.phase is Phase.FAILED and s.error is not None and "Response [502]" in s.error.line
    assert "an HTTP proxy answered the warmup request with 502" in verdict_line(s)


def test_the_llm_d_launchers_lines_are_never_a_phase() -> None:
    foreign = (
        "[Control Plane] Server warmup completed in 3.21s (cold-start elapsed_since_start=45.10s).\n"
        "Hooked SGLang _wait_and_warmup in 0.01s\n"
        "Released GPU memory occupation for tags=['weights', 'kv_cache'] in 1.20s\n"
        "gVisor checkpoint completed successfully\n"
        "2026-03-01 10:00:00,123 - INFO - [Control Plane] Server warmup completed in 3.21s.\n"
    )
    assert js(foreign)["phase"] == "starting" and js(foreign)["error"] is None
    s = replay(LOADED + foreign)
    assert s.phase is Phase.LOADING_WEIGHTS and s.error is None


def test_a_bracketed_compose_service_prefix_is_a_wrapper() -> None:
    line = f"[sglang]     | {ts(3)} Memory pool end. avail mem=11.08 GB\n"
    assert js(line)["phase"] == "kv_cache"


def test_the_early_forkservers_lines_are_no_failure() -> None:
    """`SGLANG_EARLY_FORKSERVER=1` (§12): ranks leaving after their launcher is gone, a daemon replaced by a private
    forkserver. Neither is a rank's crash in the log's words; what the launcher's death means is the process watch's."""
    text = LOADED + (
        "[early_forkserver] daemon at /tmp/sglang_forkserver.json unusable (stale pid 4242); starting a private one\n"
        "[early_forkserver] pid 5151: launching process 5150 is gone; exiting\n"
    )
    got = js(text)
    assert got["phase"] == "loading_weights" and got["error"] is None


def test_the_gpu_id_envelope_of_sglang_0_1_and_0_2() -> None:
    """`[gpu_id=N]` (SGLang 0.1–0.2, alone or under a time stamp) is the GPU's index on its node: the milestones it
    carries are read, and it says no TP size (a node of a multi-node group counts from 0 again)."""
    old = "".join(f"[gpu_id={i}] Load weight begin. avail mem=70.00 GB\n" for i in range(8))
    old += "[gpu_id=0] Load weight end. type=LlamaForCausalLM, dtype=torch.float16, avail mem=60.00 GB\n"
    old += "[gpu_id=0] Memory pool end. avail mem=20.00 GB\n"
    got = js("[gpu_id=0] Init nccl begin.\n" + old)
    assert got["phase"] == "kv_cache" and got["tp_size"] is None
    stamped = js(f"{ts(1)} [gpu_id=3] Capture cuda graph begin. This can take up to several minutes.\n")
    assert stamped["phase"] == "cuda_graph" and stamped["tp_size"] is None
    # its decode line had no stage word yet
    decode = "[gpu_id=0] #running-req: 233, #token: 370959, token usage: 0.82, gen throughput (token/s): 4594.01, #queue-req: 417\n"
    assert js(decode)["phase"] == "serving" and js(decode)["decode"]["gen_throughput"] == 4594.01
