"""SGLang 0.5.14 … 0.5.23 startup shapes (issue 12), on lines built from SGLang's own format strings
(python/sglang/srt/… of the 0.5.23 wheel), through the real parser and reducer; and the lines that must not be
failures."""

from __future__ import annotations

from collections.abc import Sequence

from tui.core.events import BarProgress, BatchStats, Event, Failure, Milestone, ServerArgs
from tui.core.explain import evidence
from tui.core.logparse import LogParser
from tui.core.readiness import infer_tp_size, reduce
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line

DAY = "2026-01-10"
FMT_KV = "Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: 812345, KV size: 40.12 GB, avail mem=9.80 GB"


def ts(sec: int, rank: str | None = None) -> str:
    r = f" {rank}" if rank else ""
    return f"[{DAY} 10:{sec // 60:02d}:{sec % 60:02d}{r}]"


def events(text: str) -> list[Event]:
    parser = LogParser()
    return parser.feed(text.encode()) + parser.flush()


def replay(text: str) -> Readiness:
    s = Readiness()
    now = 0.0
    for ev in events(text):
        t = getattr(ev, "t", None)
        now = t if t is not None else now
        s = reduce(s, ev, now)
    return s


def kinds(evs: Sequence[object]) -> list[str]:
    return [e.kind for e in evs if isinstance(e, Milestone)]


def frames(desc: str, sizes: list[int], fmt_desc) -> str:
    """tqdm frames as SGLang's bars write them: a bare first frame, then one frame per size (set_description)."""
    n = len(sizes)
    out = f"\r  0%|          | 0/{n} [00:00<?, ?it/s]"
    for i, size in enumerate(sizes, 1):
        out += f"\r{fmt_desc(size)}: {100 * i // n:3d}%|#####     | {i}/{n} [00:0{i}<00:01,  2.00it/s]"
    return out + "\n"


# ------------------------------------------------------------------------------------------ piecewise


PIECEWISE = (
    f"{ts(30, 'TP0')} Capture piecewise CUDA graph begin. avail mem=60.12 GB\n"
    f"{ts(30, 'TP1')} Capture piecewise CUDA graph begin. avail mem=60.10 GB\n"
    + frames("", [512, 256, 128, 64], lambda n: f"Compiling num tokens (num_tokens={n})")
    + frames(
        "", [512, 256, 128, 64], lambda n: f"Capturing num tokens (num_tokens={n} avail_mem={59.8 - n / 1000:.2f} GB)"
    )
    + f"{ts(45, 'TP0')} Capture piecewise CUDA graph end. Time elapsed: 14.91 s. mem usage=0.52 GB. avail mem=59.60 GB.\n"
)


def test_piecewise_capture_is_capture_with_its_own_bar() -> None:
    evs = events(PIECEWISE)
    bars = [e for e in evs if isinstance(e, BarProgress)]
    assert {b.bar for b in bars} == {"piecewise"}  # the bare first frames too: they follow the piecewise begin
    assert [b.done for b in bars if b.label.startswith("Capturing num tokens")] == [1, 2, 3, 4]
    assert bars[-1].avail_mem_gb == 59.74 and bars[-1].bs == 64
    begin = [e for e in evs if isinstance(e, Milestone) and e.kind == "graph_begin"]
    assert len(begin) == 2 and begin[0].get("what") == "piecewise" and not begin[0].draft


def test_piecewise_progress_in_the_state_and_the_reason() -> None:
    half = PIECEWISE.split("Capturing num tokens (num_tokens=128")[0]
    s = replay(half)
    assert s.phase is Phase.CUDA_GRAPH and s.capture is None
    assert s.piecewise is not None and (s.piecewise.done, s.piecewise.total) == (2, 4)
    assert verdict_line(s).startswith("capturing piecewise CUDA graph: 2/4 token sizes")
    assert replay(PIECEWISE).piecewise.done == 4


# ------------------------------------------------------------------------------------------ DeepGEMM


def deepgemm(kernels: int) -> str:
    text = (
        f"{ts(20, 'TP0')} Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20 mins) "
        "if you have not run `sglang.compile_deep_gemm`. It is recommended to run `sglang.compile_deep_gemm` with "
        "same args as `sglang.launch_server` for pre-compilation to reduce the overhead if you have not run it "
        "before. For example: `python3 -m sglang.compile_deep_gemm --model deepseek-ai/DeepSeek-V3 --tp 8 "
        "--trust-remote-code`\n"
    )
    for i in range(kernels):
        for rank in ("TP0", "TP1"):
            text += (
                f"{ts(21 + i, rank)} Try DeepGEMM JIT Compiling for <GEMM_NT_F8F8BF16> N={4096 * (i + 1)}, K=7168, "
                "num_groups=1 with all Ms. It only takes a little time (typically 1 sec) if you have run "
                "`python3 -m sglang.compile_deep_gemm`. \n"
            )
        text += (
            "".join(
                f"\rDeepGEMM warmup: {25 * m:3d}%|##        | {m}/4 [00:0{m}<00:0{4 - m},  1.00it/s]" for m in range(5)
            )
            + "\n"
        )
    return text


def test_deepgemm_jit_is_a_compile_step_with_a_count() -> None:
    head = f"{ts(10, 'TP0')} Memory pool end. avail mem=60.00 GB\n{ts(10, 'TP1')} Memory pool end. avail mem=60.00 GB\n"
    evs = events(head + deepgemm(3))
    assert kinds(evs).count("jit_kernel") == 6 and kinds(evs).count("jit_begin") == 1
    kernel = next(e for e in evs if isinstance(e, Milestone) and e.kind == "jit_kernel")
    assert (kernel.get("kernel"), kernel.get("n"), kernel.get("k"), kernel.get("num_groups")) == (
        "GEMM_NT_F8F8BF16",
        4096,
        7168,
        1,
    )
    assert {b.bar for b in evs if isinstance(b, BarProgress)} == {"jit"}
    assert not any(isinstance(e, Failure) for e in evs)  # the session warning says "long time", not a failure
    s = replay(head + deepgemm(3))
    assert s.phase is Phase.KV_CACHE  # a step inside the phase, not a phase of its own
    assert s.jit_active and s.jit_kernels == 6 and s.jit is not None and s.jit.done == 4
    assert verdict_line(s).startswith("compiling DeepGEMM kernels (JIT): 6 shapes, warmup 4/4")
    done = replay(
        head
        + deepgemm(1)
        + f"{ts(40, 'TP0')} Capture cuda graph end. Time elapsed: 9.00 s. mem usage=1.00 GB. avail mem=59.00 GB.\n"
    )
    assert not done.jit_active and done.jit_kernels == 2


# ------------------------------------------------------------------------------------------ HF, weight cache


def test_hf_snapshot_found_locally() -> None:
    s = replay(
        f"{ts(1, 'TP0')} Found local HF snapshot for deepseek-ai/DeepSeek-V3 at /root/.cache/huggingface/hub/"
        "models--deepseek-ai--DeepSeek-V3/snapshots/abc; skipping download.\n"
    )
    assert s.hf_snapshot == "local"
    for line in (
        "Local snapshot incomplete for m: missing model-00002-of-00004.safetensors. Will download missing files.",
        "Local HF snapshot at /hf/snapshots/abc has no files matching ['*.safetensors']; will attempt download.",
    ):
        assert replay(f"{ts(1, 'TP0')} {line}\n").hf_snapshot == "download", line  # fmt: skip


def test_engine_launched_weight_cache_daemons_are_not_standalone() -> None:
    s = replay(
        f"{ts(1)} Launching 2 weight cache daemon(s) on node 0 for model=m, pp_ranks=0..0, tp_ranks=0..1, "
        "dist_init_method=tcp://127.0.0.1:40000\n"
        "2026-01-10 10:00:05,120 [Daemon gpu=0 tp_rank=0] INFO [WeightCacheDaemon gpu=0 tp_rank=0] Model loaded from disk in 41.20s\n"
        f"{ts(9)} Weight cache daemon pp_rank=0 tp_rank=1 is ready\n"
    )
    assert s.weight_cache is not None and s.weight_cache.mode == "daemon" and not s.weight_cache.standalone
    assert s.phase is not Phase.FAILED


def test_the_standalone_launchers_daemons_keep_their_memory() -> None:
    s = replay(
        f"{ts(2)} Launched weight cache daemon gpu=0 pp_rank=0 tp_rank=0 pid=4101\n"
        f"{ts(2)} Launched weight cache daemon gpu=1 pp_rank=0 tp_rank=1 pid=4102\n"
        f"{ts(9)} All 2 weight cache daemons on node 0 are ready (pp_ranks=0..0, tp_ranks=0..1)\n"
    )
    assert s.weight_cache is not None and s.weight_cache.standalone and s.weight_cache.pids == (4101, 4102)


def test_a_client_of_a_standalone_daemon_says_so_and_nothing_there_is_a_failure() -> None:
    s = replay(
        f"{ts(1, 'TP0')} [IpcModelLoader] Fetched 1234 tensors from daemon (transport=cuda_ipc) in 2.10s\n"
        f"{ts(1, 'TP0')} [IpcModelLoader] Started daemon-liveness watchdog for pid=777\n"
        f"{ts(1, 'TP0')} [IpcModelLoader] Loaded model via IPC (mode=client), total=2.31s\n"
        f"{ts(1, 'TP1')} [IpcModelLoader] Weight cache not available or config mismatch, falling back to disk load\n"
    )
    assert s.weight_cache is not None and s.weight_cache.standalone and s.weight_cache.pids == (777,)
    assert s.weight_cache.mode == "client" and s.error is None
    assert any("standalone weight cache daemon (pid 777)" in e for e in evidence(s))


# ------------------------------------------------------------------------------------------ PD, HTTP servers


def test_pd_disaggregation_lines() -> None:
    text = (
        f"{ts(1, 'TP0')} CommonKVBootstrapServer started successfully on 0.0.0.0:8998\n"
        f"{ts(60)} Start of pd disaggregation warmup ...\n"
    )
    s = replay(text)
    assert s.pd_bootstrap and s.pd_warmup == "running" and s.phase is Phase.WARMUP
    ok = replay(
        text
        + f"{ts(61)} Disaggregation warmup requests completed for all 2 DP ranks\n{ts(61)} End of disaggregation warmup\n"
    )
    assert ok.pd_warmup == "ok"
    bad = replay(text + f"{ts(62)} Disaggregation warmup failed (mode=prefill), status codes: [500]\n")
    assert bad.pd_warmup == "failed" and bad.phase is Phase.WARMUP  # /health (UnHealthy: 503) decides, not this line
    assert "PD disaggregation warmup failed" in verdict_line(bad)


def test_rust_granian_and_reuseport_servers_are_http_up() -> None:
    for line, server in (
        ("SGLANG_RUST_SERVER enabled, Rust server listen on 0.0.0.0:30000", "rust"),
        ("SGLANG_RUST_SERVER enabled, Rust server listen on 0.0.0.0:30001 (DP rank 1/2)", "rust"),
        ("Starting embedded Granian HTTP/2 server on 0.0.0.0:30000", "granian"),
        ("Uvicorn running on 0.0.0.0:30000 with 4 SO_REUSEPORT workers", "uvicorn"),
    ):
        text = f'{ts(50)} {line}\n{ts(51)} INFO:     127.0.0.1:5000 - "GET /model_info HTTP/1.1" 200 OK\n'
        evs = events(text)
        assert kinds(evs)[-1] == "warmup_request", line  # access lines after it are the warmup's
        s = replay(text)
        assert s.phase is Phase.WARMUP and s.http_server == server, line
    assert replay(f"{ts(50)} Uvicorn running on 0.0.0.0:30000 with 4 SO_REUSEPORT workers\n").http_workers == 4


# ------------------------------------------------------------------------------------------ speculative


def test_0523_speculative_algorithms_and_plugin_names() -> None:
    for given, shown in (("EAGLE", "EAGLE"), ("EAGLE3", "EAGLE3"), ("NEXTN", "NEXTN"), ("STANDALONE", "STANDALONE"),
                         ("NGRAM", "NGRAM"), ("DFLASH", "DFLASH"), ("DSPARK", "DSPARK"), ("UNO", "UNO"),
                         ("FROZEN_KV_MTP", "FROZEN_KV_MTP"), ("my_spec", "MY_SPEC")):  # fmt: skip
        line = f"{ts(0)} server_args={{'model_path': 'm', 'tp_size': 1, 'speculative_algorithm': '{given}'}}\n"
        args = [e for e in events(line) if isinstance(e, ServerArgs)]
        assert args[0].speculative == shown, given


def test_0523_draft_captures_of_new_algorithms_are_the_drafts() -> None:
    evs = events(
        f"{ts(1, 'TP0')} Capture Frozen-KV MTP draft cuda graph begin.\n"
        f"{ts(2, 'TP0')} Capture UNO tree draft CUDA graph begin. This can take up to several minutes.\n"
        f"{ts(3, 'TP0')} Capture draft decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2], avail mem=3.00 GB\n"
    )
    begins = [e for e in evs if isinstance(e, Milestone) and e.kind == "graph_begin"]
    assert len(begins) == 3 and all(e.draft for e in begins)
    s = replay(
        f"{ts(3, 'TP0')} Capture draft decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=3.00 GB\n"
    )
    assert s.server.speculative == "unknown"  # a draft model's graph, algorithm not named
    assert (
        replay(f"{ts(1, 'TP0')} Capture Frozen-KV MTP draft cuda graph begin.\n").server.speculative == "FROZEN_KV_MTP"
    )


def test_a_draft_worker_in_a_traceback_says_speculative() -> None:
    s = replay(
        f"{ts(5, 'TP0')} Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 252, in __init__\n'
        "    self.draft_worker = DFlashWorkerV2(\n"
    )
    assert s.server.speculative == "unknown" and s.phase is Phase.FAILED and s.error is not None
    assert s.error.kind == "exception" and "Scheduler hit an exception" in s.error.line


# ------------------------------------------------------------------------------------------ warmups, EPLB


def test_warmup_bars_and_warmups_flag_are_warmup() -> None:
    text = (
        f"{ts(30)} Running warmup voice_chat\n"
        + "".join(
            f"\rWarmup prefill shapes (up to 32K): {10 * i:3d}%|#         | {i}/10 [00:0{i}<00:09,  1.00it/s]"
            for i in range(4)
        )
        + "\n"
    )
    evs = events(text)
    assert kinds(evs) == ["warmups_begin"] and {b.bar for b in evs if isinstance(b, BarProgress)} == {"warmup"}
    s = replay(text)
    assert s.phase is Phase.WARMUP and s.warmup_bar is not None and s.warmup_bar.done == 3
    assert kinds(events(f"{ts(40)} Warmup ended\n")) == ["warmups_end"]
    chunk = "\rProfiling prefill latency for dynamic chunking:  50%|#####     | 4/8 [00:02<00:02,  2.00it/s]\n"
    assert replay(chunk).phase is Phase.WARMUP


def serving() -> str:
    return (
        f"{ts(100, 'TP0')} Decode batch, #running-req: 12, #token: 9000, token usage: 0.10, cuda graph: True, "
        "gen throughput (token/s): 812.40, #queue-req: 0\n"
    )


def test_eplb_rebalance_while_serving_is_transient_not_a_failure() -> None:
    start = serving() + f"{ts(101, 'TP0')} [EPLBManager] rebalance start\n"
    s = replay(start)
    assert s.phase is Phase.SERVING and s.eplb_rebalancing and s.error is None
    assert "EPLB rebalancing" in verdict_line(s)
    end = replay(start + f"{ts(104, 'TP0')} [EPLBManager] rebalance end time=3.210s\n" + serving())
    assert end.phase is Phase.SERVING and not end.eplb_rebalancing and end.eplb_rebalances == 1
    assert not any(isinstance(e, Failure) for e in events(start))


# ------------------------------------------------------------------------------------------ not failures


def test_warnings_with_failed_or_error_in_them_are_not_failures() -> None:
    text = (
        f"{ts(1, 'TP1')} Setup Custom allreduce failed with CUDART error: peer access is not supported between "
        "these two devices. To silence this warning, specify --disable-custom-all-reduce explicitly.\n"
        f"{ts(1, 'TP0')} [Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1\n"
        "[Gloo] Rank 1 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1\n"
        f"{ts(2, 'TP0')} sglang is using nccl==2.28.3\n"
        f"{ts(3)} Launch DP1 starting at GPU #4.\n"
        f"{ts(4, 'TP0')} max_total_tokens=131072 is larger than the profiled value 120000. Use the profiled value instead.\n"
    )
    evs = events(text)
    assert not any(isinstance(e, Failure) for e in evs)
    # the custom all-reduce set-up is distributed init too (custom_all_reduce.py): a window may start at it
    assert kinds(evs) == ["dist_init", "dist_init", "dist_init", "dist_init", "dist_init", "kv_profile"]
    assert replay(text).phase is Phase.KV_CACHE
    assert kinds(events(f"{ts(5, 'TP0')} {FMT_KV}\n")) == ["kv_profile"]
    more = (
        "host:123:456 [0] NCCL INFO NCCL WARN Cuda failure 'peer access is not supported between these two devices'\n"
        "[rank1]:[W1201 10:00:01.123 socket.cpp:755] [c10d] The client socket has failed to connect to [::1]:29500 "
        "(errno: 99 - Cannot assign requested address).\n"
        f"{ts(6, 'TP0')} Health check failed. Server couldn't get a response from detokenizer for last 20 seconds.\n"
    )
    assert not any(isinstance(e, Failure) for e in events(more))


def test_an_error_level_line_that_names_a_cause_states_it() -> None:
    evs = events("2025-11-05T01:56:54.292138Z ERROR kv_events.publisher: ZMQ bind failed: Address already in use\n")
    assert [(e.kind, e.root_cause) for e in evs if isinstance(e, Failure)] == [("port_in_use", True)]
    warn = (
        "2025-11-05T01:56:54.292138Z  WARN kv_events.publisher: port 5557 busy (Address already in use), trying 5558\n"
    )
    assert not any(isinstance(e, Failure) for e in events(warn))  # the same words at WARN level: retried, not fatal


# ------------------------------------------------------------------------------------------ envelopes, cut lines


def test_tracing_envelope_and_a_cut_error_line() -> None:
    text = (
        "2025-11-05T01:56:54.281615Z  INFO model_runner.init_device_graphs: Capture cuda graph end. Time elapsed: "
        "12.80 s. mem usage=4.69 GB. avail mem=20.31 GB.   \n"
        "2025-11-05T01:56:54.292138Z ERROR scheduler.run_sch"
    )
    evs = events(text)
    end = next(e for e in evs if isinstance(e, Milestone))
    assert end.kind == "graph_end" and end.at == "2025-11-05 01:56:54.281615" and end.get("avail_mem_gb") == 20.31
    failure = next(e for e in evs if isinstance(e, Failure))
    assert (failure.kind, failure.line, failure.root_cause) == ("other", "ERROR scheduler.run_sch", False)
    whole = "2025-11-05T01:56:54.292138Z ERROR scheduler.run_scheduler_process: Scheduler hit an exception: Traceback\n"
    assert [e.kind for e in events(whole) if isinstance(e, Failure)] == ["exception"]
    assert not any(
        isinstance(e, Failure) for e in events("2025-11-05T01:56:54.29Z  INFO kv_events.__init__: error budget\n")
    )


def test_level_after_the_time() -> None:
    evs = events("[2025-12-18 07:58:50] INFO trace.py:52: Load weight begin. avail mem=70.00 GB\n")
    assert kinds(evs) == ["load_begin"]
    for line in (
        "2025-12-04 20:35:53 INFO 151972 [model_runner.py:287] Load weight begin. avail mem=70.00 GB",
        "2025-12-04 20:35:53,120 INFO sglang.srt.model_executor.model_runner: Load weight begin. avail mem=70.00 GB",
    ):
        assert kinds(events(line + "\n")) == ["load_begin"], line  # fmt: skip
    cut = [e for e in events("2025-12-04 20:35:53,120 ERROR sglang.srt.managers.sched") if isinstance(e, Failure)]
    assert [(e.kind, e.root_cause) for e in cut] == [("other", False)]
    uvicorn = events('INFO:     Started server process [12]\nINFO:     127.0.0.1:5 - "GET / HTTP/1.1" 404 Not Found\n')
    assert kinds(uvicorn) == ["uvicorn_started"] and not any(isinstance(e, Failure) for e in uvicorn)


def test_a_traceback_cut_before_its_exception_line_is_still_a_failure() -> None:
    text = (
        f"{ts(1, 'TP0')} Capture cuda graph begin. This can take up to several minutes.\n"
        f"{ts(2, 'TP0')} Traceback (most recent call last):\n"
        '  File "/sgl/cuda_graph_runner.py", line 212, in capture\n'
        "    ) = self.capture_one_batch_size(bs, forward)\n"
    )
    s = replay(text)
    assert s.phase is Phase.FAILED and s.error is not None and s.error.kind == "exception"
    assert s.error.line.endswith("Traceback (most recent call last):") and not s.error.root_cause
    later_ready = replay(text + f"{ts(9)} The server is fired up and ready to roll!\n")
    assert later_ready.phase is Phase.READY and later_ready.error is None  # ready after it: it was not fatal
    ended = replay(text + "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert (
        ended.error is not None and ended.error.line.startswith("RuntimeError: CUDA error") and ended.error.root_cause
    )


def test_sigquit_before_the_schedulers_exception() -> None:
    s = replay(
        f"{ts(1)} Received sigquit from a child process. It usually means the child failed.\n"
        f"{ts(1, 'TP2')} Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/scheduler.py", line 3118, in run_scheduler_process\n'
    )
    assert s.error is not None and s.error.kind == "exception" and "Scheduler hit an exception" in s.error.line
    assert s.server.tp_size is None  # a lone TP2: at least 3 ranks, no size


def test_tp_inference() -> None:
    assert infer_tp_size((7,)) == (8, "inferred: highest rank seen is TP7")
    assert infer_tp_size((2,)) == (None, "")
    assert infer_tp_size((0, 1, 2))[0] is None and infer_tp_size((0, 1, 10))[0] is None  # lower bounds, no size
    one = replay(
        f"{ts(1, 'TP0')} Load weight end. type=M, dtype=torch.bfloat16, avail mem=3.64 GB, mem usage=18.82 GB.\n"
    )
    assert one.server.tp_size == 1 and one.tp_inferred == "inferred: per-rank startup lines appear for TP0 only"
    assert any("tp 1 inferred" in e for e in evidence(one))
    untagged = replay(f"{ts(1)} Load weight end. elapsed=9.10 s, type=M, avail mem=60.00 GB, mem usage=15.00 GB.\n")
    assert untagged.server.tp_size == 1 and "no TP tag" in untagged.tp_inferred
    foreign = (
        "2025-11-05T01:56:54.28Z  INFO model_runner.init_device_graphs: Capture cuda graph end. Time elapsed: 1 s.\n"
    )
    assert replay(foreign + foreign).server.tp_size is None  # a format that drops the labels says nothing
    decode_only = replay(serving())
    assert decode_only.server.tp_size is None  # TP0 prints the batch lines whatever the TP size


# ------------------------------------------------------------------------------------------ prefill, probes


def prefill(sec: int, new_token: int, running: int) -> str:
    return (
        f"{ts(sec, 'TP0')} Prefill batch, #new-seq: 1, #new-token: {new_token}, #cached-token: 0, token usage: 0.00, "
        f"#running-req: {running}, #queue-req: 0, #pending-token: 0, cuda graph: True, input throughput (token/s): 9.10\n"
    )


def test_a_slice_of_prefill_lines_is_serving_but_a_health_checks_prefill_is_not() -> None:
    assert replay(prefill(1, 35, 0) + prefill(2, 40, 0)).phase is Phase.SERVING
    assert replay(prefill(1, 35, 2)).phase is Phase.SERVING  # other requests running
    warmup = replay(prefill(1, 7, 0) + f"{ts(2)} The server is fired up and ready to roll!\n")
    assert warmup.phase is Phase.READY  # one idle prefill then fired up: it was the warmup's request
    assert replay(prefill(1, 1, 0)).phase is Phase.STARTING  # /health's 1-token generation on an idle server
    assert not any(isinstance(e, BatchStats) for e in events(prefill(1, 1, 0)))
    assert [e.stage for e in events(prefill(1, 1, 3)) if isinstance(e, BatchStats)] == ["prefill"]  # busy: real
    ready = f"{ts(0)} The server is fired up and ready to roll!\n"
    probe_access = f'{ts(2)} INFO:     127.0.0.1:40000 - "GET /health?from=sglang-tui HTTP/1.1" 200 OK\n'
    assert replay(ready + prefill(1, 1, 0) + probe_access).phase is Phase.READY  # our probe: not serving
    assert replay(ready + prefill(1, 1, 0) + prefill(3, 812, 0)).phase is Phase.SERVING  # a user's request


def test_the_tools_own_access_lines_are_not_warmup_requests() -> None:
    text = (
        f"{ts(50)} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
        f'{ts(51)} INFO:     127.0.0.1:40000 - "GET /model_info?from=sglang-tui HTTP/1.1" 200 OK\n'
        f'{ts(52)} INFO:     127.0.0.1:40002 - "GET /model_info HTTP/1.1" 200 OK\n'
    )
    reqs = [e for e in events(text) if isinstance(e, Milestone) and e.kind == "warmup_request"]
    assert len(reqs) == 1 and "from=sglang-tui" not in reqs[0].line


def test_a_killed_server_and_a_child_that_failed_are_failure_markers() -> None:
    s = replay(f"{ts(1, 'TP0')} Load weight begin. avail mem=70.00 GB\nKilled\n")
    assert s.phase is Phase.FAILED and s.error is not None and (s.error.kind, s.error.line) == ("other", "Killed")
    assert not s.error.root_cause
    child = replay(f"{ts(2)} Child process unexpectedly failed with exitcode=9. pid=117981\n")
    assert child.error is not None and child.error.kind == "other"
    assert replay(f"{ts(3)} Killed 3 stale requests after timeout\n").error is None


def test_a_deepgemm_session_gets_a_longer_stall_limit() -> None:
    from tui.core.stall import JIT_COMPILE, PHASE_LIMITS, limit_for

    head = f"{ts(10, 'TP0')} Capture cuda graph begin. This can take up to several minutes. avail mem=60.00 GB\n"
    plain = replay(head)
    assert limit_for(plain) == PHASE_LIMITS[Phase.CUDA_GRAPH] < JIT_COMPILE
    assert limit_for(replay(head + deepgemm(1))) == JIT_COMPILE


def test_out_of_memory_spelled_by_triton_and_npu_is_oom() -> None:
    for cause in (
        "Exception: Capture cuda graph failed: Triton Error [CUDA]: out of memory",
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.96 GiB total capacity)",
    ):
        s = replay(f"{ts(1, 'TP0')} Scheduler hit an exception: Traceback (most recent call last):\n"
                   '  File "/sgl/model_runner.py", line 1, in capture\n' + cause + "\n")  # fmt: skip
        assert s.error is not None and (s.error.kind, s.error.line) == ("oom", cause), cause
    other = replay("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert other.error is None  # outside a traceback only a named cause counts
