"""A window of the log that starts mid-run (issue 21): a log that *begins* at one line of a kind, with no
server_args and no milestone before it, gives the phase that line proves and the "attached mid-run" fact.

Lines are built from SGLang's format strings (the file each comes from is named beside it, python/sglang/srt/… of
the 0.4.6, 0.5.1 and 0.5.23 wheels) and fed through the real parser and reducer; the JSON is `replay --json`'s
(commands/replay.replay_stream and core/report.to_json, in process).
"""

from __future__ import annotations

import io

import pytest

from tui.commands.replay import replay_stream
from tui.core.events import HealthResult, Milestone, ServerProcess
from tui.core.explain import evidence
from tui.core.logparse import LogParser
from tui.core.readiness import reduce
from tui.core.report import to_json
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line

DAY = "2026-01-10"


def ts(sec: int, rank: str | None = None) -> str:
    r = f" {rank}" if rank else ""
    return f"[{DAY} 10:{sec // 60:02d}:{sec % 60:02d}{r}]"


def replay(text: str) -> Readiness:
    return replay_stream(io.BytesIO(text.encode()), "window")


def fold(text: str, state: Readiness | None = None) -> Readiness:
    """The parser and reducer over `text`, from `state` (a watch's first state), at the lines' own clock."""
    s = state if state is not None else Readiness()
    parser = LogParser()
    now = 0.0
    for ev in parser.feed(text.encode()) + parser.flush():
        now = getattr(ev, "t", None) or now
        s = reduce(s, ev, now)
    return s


def frames(desc: str, n: int, upto: int, newline: bool = True) -> str:
    """tqdm frames as SGLang writes them: `\\r` before each, a description, `k/n`, elapsed<remaining."""
    out = "".join(
        f"\r{desc}: {100 * i // n:3d}%|#         | {i}/{n} [00:{i:02d}<00:10,  1.00it/s]" for i in range(upto + 1)
    )
    return out + ("\n" if newline else "")


# (line or lines, phase, mid-run kind, words in the reason): each a log that begins there.
WINDOWS = [
    # layers/deep_gemm_wrapper/compile_utils.py: `tqdm(m_list, desc="DeepGEMM warmup")` on the first rank
    pytest.param(frames("DeepGEMM warmup", 64, 10), Phase.KV_CACHE, "jit", "DeepGEMM warmup", id="deepgemm-bar"),
    # …the same file: logger.warning("Entering DeepGEMM JIT Pre-Compile session. It may take a long time …")
    pytest.param(
        f"{ts(1, 'TP0')} Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20 mins) "
        "if you have not run `sglang.compile_deep_gemm`. It is recommended to run `sglang.compile_deep_gemm` with "
        "same args as `sglang.launch_server` for pre-compilation to reduce the overhead if you have not run it "
        "before. For example: `python3 -m sglang.compile_deep_gemm --model deepseek-ai/DeepSeek-V3 --tp 8 "
        "--trust-remote-code`\n",
        Phase.KV_CACHE,
        "jit_begin",
        "TP0's DeepGEMM JIT session",
        id="deepgemm-session",
    ),
    # …and f"Try DeepGEMM JIT Compiling for <{kernel_type.name}> N={n}, K={k}, num_groups={num_groups} with all Ms."
    pytest.param(
        f"{ts(1, 'TP3')} Try DeepGEMM JIT Compiling for <GEMM_NT_F8F8BF16> N=7168, K=2048, num_groups=1 with all Ms.\n",
        Phase.KV_CACHE,
        "jit_kernel",
        "TP3's DeepGEMM JIT compile",
        id="deepgemm-kernel",
    ),
    # model_executor/runner/flashinfer_autotune.py: logger.info("Running FlashInfer autotune with cache: %s", …)
    pytest.param(
        f"{ts(1, 'TP0')} Running FlashInfer autotune with cache: /root/.cache/sglang/flashinfer_autotune.json\n",
        Phase.KV_CACHE,
        "kernel_autotune",
        "running FlashInfer autotune",
        id="flashinfer-autotune",
    ),
    # torch/_inductor/select_algorithm.py (stderr, no envelope) under --enable-torch-compile, inside capture
    pytest.param(
        "AUTOTUNE mm(16x7168, 7168x2112)\nstrides: [7168, 1], [1, 7168]\ndtypes: torch.bfloat16, torch.bfloat16\n"
        "  mm 0.0123 ms 100.0% \n  triton_mm_4 0.0150 ms 82.0% ACC_TYPE='tl.float32', BLOCK_K=128, num_warps=4\n"
        "SingleProcess AUTOTUNE benchmarking takes 1.2345 seconds and 0.5421 seconds precompiling for 20 choices\n",
        Phase.CUDA_GRAPH,
        "compile_autotune",
        "torch.compile is autotuning",
        id="inductor-autotune",
    ),
    # model_executor/cuda_graph_runner.py ≤ 0.5.9: rank0_log(f"Capture cuda graph bs {self.capture_bs}")
    pytest.param(
        f"{ts(1, 'TP0')} Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32]\n",
        Phase.CUDA_GRAPH,
        "graph_step",
        "its begin is not in view",
        id="capture-bs",
    ),
    # distributed/device_communicators/custom_all_reduce.py: "Registering %d cuda graph addresses"
    pytest.param(
        f"{ts(1, 'TP0')} Registering 4128 cuda graph addresses\n",
        Phase.CUDA_GRAPH,
        "graph_step",
        "capturing CUDA graphs",
        id="registering",
    ),
    # model_loader/weight_utils.py: log_info_on_rank0(logger, f"Using model weights format {allow_patterns}")
    pytest.param(
        f"{ts(1, 'TP0')} Using model weights format ['*.safetensors']\n",
        Phase.LOADING_WEIGHTS,
        "load_step",
        "TP0's weight loading line",
        id="weights-format",
    ),
    # model_loader/weight_utils.py (0.5.14+ default): "Multi-thread loading shards" with `\r`-only frames, no
    # trailing "Load weight end" yet, the last frame not ended by a newline
    pytest.param(
        frames("Multi-thread loading shards", 30, 12, newline=False).replace("%|#         |", "% Completed |"),
        Phase.LOADING_WEIGHTS,
        "weights",
        "weight shard bar",
        id="multithread-shard-bar",
    ),
    # scheduler.py, max_total_num_tokens= … (the scheduler's last startup line)
    pytest.param(
        f"{ts(1, 'TP0')} max_total_num_tokens=2490368, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=48, context_len=131072, available_gpu_mem=20.65 GB\n",
        Phase.KV_CACHE,
        "max_tokens",
        "waiting for the HTTP server",
        id="max-tokens",
    ),
    # distributed/device_communicators/custom_all_reduce_utils.py (0.5.23), custom_all_reduce.py (0.4.6)
    pytest.param(
        f"{ts(1, 'TP2')} Custom allreduce is disabled because your platform lacks GPU P2P capability or P2P test "
        "failed. To silence this warning, specify --disable-custom-all-reduce explicitly.\n",
        Phase.INIT,
        "dist_init",
        "TP2's distributed init line",
        id="custom-allreduce",
    ),
    # NCCL (NCCL_DEBUG=INFO), init.cc: "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx … - Init COMPLETE"
    pytest.param(
        "h200-01:3120461:3121002 [3] NCCL INFO comm 0x55d5c8a0 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 5d000 "
        "commId 0x9ab1c2d3e4f50617 - Init COMPLETE\n",
        Phase.INIT,
        "dist_init",
        "the distributed init line",
        id="nccl-info",
    ),
    # any rank's line of no kind the parser knows: its scheduler runs
    pytest.param(
        f"{ts(1, 'TP2')} Cache flushed successfully!\n", Phase.INIT, "rank", "TP2's line", id="rank-line-alone"
    ),
    # eplb/eplb_manager.py: logger.info("[EPLBManager] rebalance start") / f"[EPLBManager] rebalance end …"
    pytest.param(
        f"{ts(1, 'TP0')} [EPLBManager] rebalance start\n{ts(3, 'TP0')} [EPLBManager] rebalance end time=1.52s\n",
        Phase.SERVING,
        "eplb_begin",
        "serving",
        id="eplb-rebalance",
    ),
    # managers/scheduler.py: "KV cache pool is full. Retract requests. #retracted_reqs: …" (0.5.x)
    pytest.param(
        f"{ts(1, 'TP0')} KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.7000 -> "
        "0.9000\n",
        Phase.SERVING,
        "retract",
        "serving",
        id="retract",
    ),
    # 0.4.6 managers/scheduler.py: "Decode out of memory happened. #retracted_reqs: …" (a retract, not a failure)
    pytest.param(
        f"{ts(1, 'TP0')} Decode out of memory happened. #retracted_reqs: 2, #new_token_ratio: 0.4000 -> 0.6000\n",
        Phase.SERVING,
        "retract",
        "serving",
        id="retract-0.4.6",
    ),
    # uvicorn's access log (SGLang's format: "[%(asctime)s] %(levelprefix)s %(client_addr)s - "%(request_line)s" …")
    pytest.param(
        f'{ts(1)} INFO:     10.42.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n',
        Phase.WARMUP,
        "http_access",
        "HTTP requests answered (POST /v1/chat/completions 200",
        id="access-line",
    ),
    # a /health 503 (0.4.10+ answer 503 until the warmup is done): HTTP is up, not ready
    pytest.param(
        f'{ts(1)} INFO:     10.42.0.1:40022 - "GET /health HTTP/1.1" 503 Service Unavailable\n',
        Phase.WARMUP,
        "http_access",
        "HTTP requests answered (GET /health 503",
        id="health-503",
    ),
    # --log-requests: managers/tokenizer_manager.py f"Receive: obj={…}" (0.5.23 utils/request_logger.py)
    pytest.param(
        f"{ts(1)} Receive: obj=GenerateReqInput(text='Hello', sampling_params={{'max_new_tokens': 8}}, rid='9f2c')\n",
        Phase.WARMUP,
        "request_log",
        "requests received",
        id="request-log",
    ),
]


# The classic milestones and bars place a window too (python/sglang/srt/model_executor/model_runner.py,
# mem_cache/memory_pool.py, cuda_graph_runner.py, entrypoints/http_server.py, scheduler_metrics_mixin.py …).
WINDOWS += [
    pytest.param(
        f"{ts(1, 'TP1')} Init torch distributed begin.\n", Phase.INIT, "init_begin", "TP1's Init begin", id="init-begin"
    ),  # fmt: skip
    pytest.param(
        f"{ts(1, 'TP5')} Load weight begin. avail mem=138.05 GB\n",
        Phase.LOADING_WEIGHTS,
        "load_begin",
        "TP5's Load weight begin",
        id="load-begin",
    ),  # fmt: skip
    pytest.param(
        f"{ts(1, 'TP2')} KV Cache is allocated. #tokens: 2490368, K size: 47.50 GB, V size: 47.50 GB\n",
        Phase.KV_CACHE,
        "kv_alloc",
        "TP2's KV Cache is allocated",
        id="kv-alloc",
    ),  # fmt: skip
    pytest.param(
        f"{ts(1, 'TP2')} Memory pool end. avail mem=26.05 GB\n",
        Phase.KV_CACHE,
        "mem_pool_end",
        "TP2's Memory pool end",
        id="mem-pool-end",
    ),  # fmt: skip
    pytest.param(
        f"{ts(1, 'TP0')} Found local HF snapshot for deepseek-ai/DeepSeek-V3 at /hf/snapshots/abc; skipping "
        "download.\n",
        Phase.LOADING_WEIGHTS,
        "hf_snapshot",
        "TP0's hf_snapshot",
        id="hf-snapshot",
    ),  # fmt: skip
    pytest.param(
        f"{ts(1, 'TP3')} Capture cuda graph begin. This can take up to several minutes. avail mem=25.74 GB\n",
        Phase.CUDA_GRAPH,
        "graph_begin",
        "TP3's Capture CUDA graph begin",
        id="capture-begin",
    ),  # fmt: skip
    pytest.param(
        frames("Capturing batches (bs=48 avail_mem=25.71 GB)", 23, 5),
        Phase.CUDA_GRAPH,
        "capture",
        "capture bar",
        id="capture-bar",
    ),  # fmt: skip
    pytest.param(
        frames("Capturing num tokens (num_tokens=512 avail_mem=59.80 GB)", 12, 3),
        Phase.CUDA_GRAPH,
        "piecewise",
        "piecewise capture bar",
        id="piecewise-bar",
    ),  # fmt: skip
    pytest.param(
        f"{ts(1)} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n",
        Phase.WARMUP,
        "uvicorn_running",
        "the Uvicorn running",
        id="uvicorn-running",
    ),  # fmt: skip
    pytest.param(
        f"{ts(1)} The server is fired up and ready to roll!\n", Phase.READY, "fired_up", "the fired up", id="fired-up"
    ),  # fmt: skip
    pytest.param(
        f"{ts(1, 'TP0')} Decode batch, #running-req: 4, #token: 2304, token usage: 0.01, cuda graph: True, "
        "gen throughput (token/s): 598.31, #queue-req: 0\n",
        Phase.SERVING,
        "batch",
        "TP0's batch line",
        id="decode-batch",
    ),  # fmt: skip
]


@pytest.mark.parametrize(("text", "phase", "kind", "words"), WINDOWS)
def test_a_log_that_begins_at_a_line_kind_gives_its_phase_and_the_mid_run_fact(
    text: str, phase: Phase, kind: str, words: str
) -> None:
    s = replay(text)
    assert s.phase is phase and s.error is None
    assert s.mid_run is not None and s.mid_run.kind == kind and s.mid_run.phase in (phase, Phase.INIT)
    shown = verdict_line(s) if phase not in (Phase.READY, Phase.SERVING) else " ".join(evidence(s))
    assert words in shown or words in verdict_line(s), (verdict_line(s), evidence(s))
    assert any(e.startswith("log: attached mid-run: the log starts at") for e in evidence(s))
    obj = to_json(s)
    assert obj["phase"] == phase.value and obj["error"] is None and obj["reason"] == verdict_line(s)
    if phase not in (Phase.READY, Phase.SERVING, Phase.FAILED):
        assert "attached mid-run: the log starts at" in obj["reason"]


def test_a_window_that_starts_inside_a_bar_frame_keeps_one_weight_bar() -> None:
    """The window's first bytes may cut a `\r` frame's description ("ding shards: …"): the frames after it are the
    same bar (not a draft model's second one)."""
    text = "".join(
        f"\rMulti-thread loading shards: {100 * i // 30:3d}% Completed | {i}/30 [00:{i:02d}<00:30,  1.00it/s]"
        for i in range(12, 16)
    )[len("\rMulti-thread loa") :]
    s = replay(text)
    assert s.shards is not None and (s.shards.done, s.shards.total) == (15, 30) and s.draft_shards is None
    assert s.phase is Phase.LOADING_WEIGHTS and s.mid_run is not None and s.mid_run.kind == "weights"


def test_the_same_logs_with_their_launch_in_view_are_not_mid_run() -> None:
    """With the launch line first, nothing is a window: no mid-run fact, and the phases are the startup's."""
    launch = f"{ts(0)} server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V3', tp_size=8, port=30000)\n"
    s = replay(launch + f"{ts(1, 'TP3')} Try DeepGEMM JIT Compiling for <GEMM_NT_F8F8BF16> N=7168, K=2048, "
               "num_groups=1 with all Ms.\n")  # fmt: skip
    assert s.phase is Phase.KV_CACHE and s.mid_run is None and "mid-run" not in verdict_line(s)


def test_a_rank_line_is_replaced_by_the_kind_the_same_line_carries() -> None:
    """A window's first line yields a rank (init) and then its kind: the fact names the kind, not "a line"."""
    s = replay(f"{ts(1, 'TP0')} Try DeepGEMM JIT Compiling for <GEMM_NT_F8F8BF16> N=7168, K=2048 with all Ms.\n")
    assert s.mid_run is not None and s.mid_run.kind == "jit_kernel" and s.mid_run.rank == "TP0"
    assert verdict_line(s).endswith("attached mid-run: the log starts at TP0's DeepGEMM JIT compile")


def test_the_window_phase_moves_on_with_the_lines_after_it() -> None:
    """A window that starts at DeepGEMM and goes on to capture, HTTP and fired up ends ready; the fact stays (the
    log's start), the reason drops it once the phase is past the one it placed."""
    text = (
        f"{ts(1, 'TP0')} Try DeepGEMM JIT Compiling for <GEMM_NT_F8F8BF16> N=7168, K=2048, num_groups=1 with all Ms.\n"
        + frames("DeepGEMM warmup", 8, 8)
        + f"{ts(20, 'TP0')} Capture cuda graph begin. This can take up to several minutes. avail mem=20.10 GB\n"
    )
    s = replay(text)
    assert s.phase is Phase.CUDA_GRAPH and s.mid_run is not None and s.mid_run.phase is Phase.KV_CACHE
    assert "mid-run" not in verdict_line(s) and any("mid-run" in e for e in evidence(s))
    assert [span.phase for span in s.timeline] == [Phase.KV_CACHE, Phase.CUDA_GRAPH]
    done = replay(
        text + f"{ts(40)} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
        f"{ts(41)} The server is fired up and ready to roll!\n"
    )
    assert done.phase is Phase.READY and done.mid_run == s.mid_run


def test_a_health_200_access_line_counts_like_fired_up_by_the_readiness_rule() -> None:
    """A Kubernetes probe's `GET /health … 200` says the server answered up: ready on replay (no probe); where
    /health is probed, this server's own /health 200 decides; with --no-health, a live process."""
    line = f'{ts(5)} INFO:     10.42.0.1:40022 - "GET /health HTTP/1.1" 200 OK\n'
    s = replay(line)
    assert s.phase is Phase.READY and s.log_health is not None and not s.log_ready
    assert verdict_line(s).startswith("ready: the log shows /health answered 200 at 10:00:05")
    assert [span.phase for span in s.timeline] == [Phase.READY]
    assert replay(line.replace("/health", "/health_generate")).phase is Phase.READY

    probed = fold(line, Readiness.of(health_probed=True, health_port=30000))
    assert probed.phase is Phase.WARMUP  # the log line is not this tool's /health 200
    assert verdict_line(probed).startswith("the log shows /health answered 200 at 10:00:05; waiting for /health 200")
    ok = reduce(probed, HealthResult("/health", "ok", 200), 10.0)
    assert ok.phase is Phase.READY

    no_health = fold(line, Readiness.of(health_probed=False))
    assert no_health.phase is Phase.WARMUP
    assert reduce(no_health, ServerProcess(True, (4242,)), 10.0).phase is Phase.READY


def test_our_own_probe_lines_place_nothing() -> None:
    """sglang-tui's probes are marked (core/probes.py): their access lines are not the server's traffic."""
    s = replay(f'{ts(1)} INFO:     127.0.0.1:50312 - "GET /health?from=sglang-tui HTTP/1.1" 200 OK\n')
    assert s.phase is Phase.STARTING and s.mid_run is None and s.log_health is None


def test_serving_and_access_lines_move_nothing_while_the_launch_is_in_view() -> None:
    """A launch that is loading, in a log another server still writes to (its access and EPLB lines): the startup
    in view decides, so those lines do not jump the phase."""
    text = (
        f"{ts(0)} server_args=ServerArgs(model_path='m', tp_size=2, port=30001)\n"
        f"{ts(2, 'TP0')} Load weight begin. avail mem=78.20 GB\n"
        f'{ts(3)} INFO:     10.42.0.7:51234 - "POST /generate HTTP/1.1" 200 OK\n'
        f'{ts(3)} INFO:     10.42.0.1:40022 - "GET /health HTTP/1.1" 200 OK\n'
        f"{ts(4, 'TP0')} [EPLBManager] rebalance start\n"
    )
    s = replay(text)
    assert s.phase is Phase.LOADING_WEIGHTS and s.mid_run is None and s.log_health is None
    # …nor are they this launch's milestones: the answerer reads the latest one to vouch for a /health 200
    assert s.latest_milestone is not None and s.latest_milestone.kind == "load_begin" and not s.eplb_rebalancing


def test_a_rank_line_window_does_not_make_this_servers_health_foreign() -> None:
    """Init read from ranks' lines alone does not say HTTP is down: the /health 200 is not judged another
    server's for being early (a serving server's rotated log reads so)."""
    s = fold(f"{ts(1, 'TP0')} Cache flushed successfully!\n", Readiness.of(health_probed=True, health_port=30000))
    assert s.phase is Phase.INIT
    s = reduce(s, HealthResult("/health", "ok", 200), 5.0)
    assert not any("before this server's HTTP is up" in e for e in evidence(s) + (verdict_line(s),))


def test_batch_lines_after_a_rank_line_still_show_serving() -> None:
    """A window whose first line is a rank's line of no kind (init, at least) and then decode or busy prefill lines:
    serving, as without that line."""
    rank = f"{ts(1, 'TP0')} Cache flushed successfully!\n"
    decode = (f"{ts(2, 'TP0')} Decode batch, #running-req: 3, #token: 900, token usage: 0.01, cuda graph: True, "
              "gen throughput (token/s): 180.00, #queue-req: 0\n")  # fmt: skip
    prefill = (f"{ts(2, 'TP0')} Prefill batch, #new-seq: 2, #new-token: 512, #cached-token: 0, token usage: 0.02, "
               "#running-req: 3, #queue-req: 1, input throughput (token/s): 900.00\n")  # fmt: skip
    assert replay(rank + decode).phase is Phase.SERVING
    assert replay(rank + prefill).phase is Phase.SERVING
    assert replay(rank).phase is Phase.INIT


def test_a_serving_window_vouches_for_this_servers_health() -> None:
    """Decode lines with no launch in view (a rotated log): the log's server is up, so where /health is probed
    its 200 makes the server ready and the next decode line serving, not "something else answers"."""
    decode = (f"{ts(1, 'TP0')} Decode batch, #running-req: 3, #token: 900, token usage: 0.01, cuda graph: True, "
              "gen throughput (token/s): 180.00, #queue-req: 0\n")  # fmt: skip
    s = fold(decode, Readiness.of(health_probed=True, health_port=30000, log_watched=True))
    assert s.phase is Phase.STARTING  # the readiness rule: this tool's /health 200 first
    s = reduce(s, HealthResult("/model_info", "ok", 200, model_path="m"), 2.0)
    s = reduce(s, HealthResult("/health", "ok", 200), 2.0)
    assert s.phase is Phase.READY, verdict_line(s)
    launched = fold(f"{ts(0)} server_args=ServerArgs(model_path='m', tp_size=1, port=30000)\n" + decode,
                    Readiness.of(health_probed=True, health_port=30000, log_watched=True))  # fmt: skip
    launched = reduce(launched, HealthResult("/model_info", "ok", 200, model_path="m"), 2.0)
    assert reduce(launched, HealthResult("/health", "ok", 200), 2.0).phase is not Phase.READY  # a launch in view


def test_access_lines_are_read_once_each_in_a_serving_log() -> None:
    """A serving log holds millions of access lines: the parser reports the first of each kind, nothing more."""
    lines = "".join(
        f'{ts(i % 60)} INFO:     10.42.0.{i % 9}:5{i:04d} - "POST /generate HTTP/1.1" 200 OK\n'
        f'{ts(i % 60)} INFO:     10.42.0.1:40022 - "GET /health HTTP/1.1" 200 OK\n'
        for i in range(2000)
    )
    parser = LogParser()
    evs = parser.feed(lines.encode()) + parser.flush()
    assert [e.kind for e in evs if isinstance(e, Milestone)] == ["http_access", "health_access"]
