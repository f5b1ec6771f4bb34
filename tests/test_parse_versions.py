"""The parser on logs constructed from SGLang's format strings (tests/fixtures/logs, built by build.py):
one per version style, topology and wrapper, plus failure chains."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tui.core.events import (
    BarProgress,
    BatchStats,
    Event,
    Failure,
    LaunchStarted,
    Milestone,
    RankSeen,
    ServerArgs,
    SpeculativeHint,
)
from tui.core.logparse import LogParser

LOGS = Path(__file__).resolve().parent / "fixtures" / "logs"


def parse(name: str) -> list[Event]:
    parser = LogParser()
    return parser.feed((LOGS / name).read_bytes()) + parser.flush()


def of(events: list[Event], kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


def milestones(events: list[Event], kind: str, *, draft: bool | None = None) -> list[Milestone]:
    return [e for e in of(events, Milestone) if e.kind == kind and (draft is None or e.draft == draft)]


def bars(events: list[Event], bar: str) -> list[BarProgress]:
    return [e for e in of(events, BarProgress) if e.bar == bar]


# ------------------------------------------------------------------------------------------------ versions


def test_046_tp1_no_rank_prefix_old_spellings() -> None:
    ev = parse("v0.4.6-tp1-ready.log")
    (args,) = of(ev, ServerArgs)
    assert (args.model, args.tp_size, args.speculative, args.port, args.host) == (
        "Qwen/Qwen2.5-7B-Instruct", 1, None, 30000, "127.0.0.1")  # fmt: skip
    assert not of(ev, RankSeen)  # TP=1 prints no rank tokens
    assert all(m.rank is None and not m.draft for m in of(ev, Milestone))
    end = milestones(ev, "load_end")[0]
    assert (end.get("type"), end.get("avail_mem_gb"), end.get("mem_usage_gb")) == ("Qwen2ForCausalLM", 64.22, 14.37)
    graph_end = milestones(ev, "graph_end")[0]
    assert (graph_end.get("elapsed_s"), graph_end.get("avail_mem_gb"), graph_end.get("mem_usage_gb")) == (
        5.02,
        7.89,
        0.52,
    )
    assert [b.done for b in bars(ev, "weights")] == [0, 1, 2, 3, 4]  # `\r…\n` frames, the close repeat dropped
    capture = bars(ev, "capture")
    assert capture[-1].done == capture[-1].total == 4
    assert capture[1].bs is None and capture[1].avail_mem_gb == 8.41  # 0.4.6: no bs= in the description
    assert milestones(ev, "max_tokens")[0].get("tokens") == 1019264
    assert [m.get("path") for m in milestones(ev, "warmup_request")] == ["/get_model_info", "/generate"]
    assert milestones(ev, "fired_up")[0].at == "2025-11-29 10:00:24"
    decode = [b for b in of(ev, BatchStats) if b.stage == "decode"]
    assert (decode[-1].gen_throughput, decode[-1].queue_req, decode[-1].accept_len) == (81.52, 1, None)
    assert sum(b.count for b in decode) == 2
    assert not of(ev, SpeculativeHint) and not of(ev, Failure)


def test_059_tp8_eagle3_draft_cycle_and_bars() -> None:
    ev = parse("v0.5.9-tp8-eagle3-ready.log")
    (args,) = of(ev, ServerArgs)
    assert (args.tp_size, args.speculative, args.draft_model) == (
        8,
        "EAGLE3",
        "lmsys/sglang-EAGLE3-LLaMA3.3-Instruct-70B",
    )
    hint = of(ev, SpeculativeHint)[0]  # the bare pre-logging warning, before server_args
    assert hint.algorithm is None and hint.at is None and ev.index(hint) < ev.index(args)
    assert sorted(r.tp_rank for r in of(ev, RankSeen)) == list(range(8))
    for kind in ("init_begin", "init_end", "load_begin", "load_end", "kv_alloc", "mem_pool_end"):
        assert len(milestones(ev, kind, draft=False)) == 8, kind
        assert len(milestones(ev, kind, draft=True)) == 8, kind
    assert {m.get("type") for m in milestones(ev, "load_end", draft=True)} == {"LlamaForCausalLMEagle3"}
    assert {m.get("what") for m in milestones(ev, "graph_begin", draft=True)} == {"draft", "draft extend"}
    assert {m.get("what") for m in milestones(ev, "graph_begin", draft=False)} == {""}
    weights, draft_weights = bars(ev, "weights"), bars(ev, "draft_weights")
    assert (max(b.done for b in weights), weights[-1].total) == (30, 30)
    assert [(b.done, b.total) for b in draft_weights] == [(0, 1), (1, 1)]  # same desc, after the main load end
    assert weights[3].elapsed_s == 9.0 and weights[3].label == "Loading safetensors checkpoint shards"
    capture = bars(ev, "capture")
    assert capture[0].done == 0 and capture[0].label == ""  # the bare first frame
    assert capture[2].bs == 48 and capture[2].avail_mem_gb == 25.71
    ready = milestones(ev, "fired_up")[0]
    decode = [b for b in of(ev, BatchStats) if b.stage == "decode"][-1]
    assert ev.index(decode) > ev.index(ready)
    assert (decode.accept_len, decode.accept_rate, decode.gen_throughput, decode.running_req) == (3.21, 0.80, 598.31, 4)
    assert decode.rank == "TP0" and decode.at == "2025-11-29 10:05:02"


def test_0514_ms_timestamps_cr_bar_with_glued_rank_line() -> None:
    ev = parse("v0.5.14-tp8-ms-ready.log")
    (args,) = of(ev, ServerArgs)
    assert args.at == "2025-11-29 10:00:01.250" and args.t == pytest.approx(1764410401.25)
    weights = bars(ev, "weights")
    assert [b.done for b in weights] == list(range(9))  # every `\r` frame seen
    assert weights[0].label == "Multi-thread loading shards"
    glued = [m for m in milestones(ev, "load_end") if m.rank == "TP5"]
    assert len(glued) == 1 and glued[0].at == "2025-11-29 10:00:27.004"
    assert glued[0].line.startswith("[2025-11-29 10:00:27.004 TP5] Load weight end.")
    # the glued line sits between the frames it interrupted
    assert ev.index(weights[7]) < ev.index(glued[0]) < ev.index(weights[8])
    assert not bars(ev, "draft_weights")  # speculative_algorithm=None: no draft, however late a bar comes
    begin = milestones(ev, "graph_begin")[0]
    assert (begin.get("what"), begin.get("bs"), begin.get("avail_mem_gb")) == (
        "target decode",
        [1, 2, 4, 8, 16, 24, 32],
        16.10,
    )
    kv = milestones(ev, "kv_alloc")[0]
    assert (kv.get("tokens"), kv.get("kv_size_gb")) == (1142656, 37.70)
    decode = [b for b in of(ev, BatchStats) if b.stage == "decode"]
    assert decode[-1].gen_throughput == 54.0 and sum(b.count for b in decode) == 5


def test_0523_dict_server_args_memory_baselines_draft_graphs() -> None:
    ev = parse("v0.5.23-tp8-eagle3-ready.log")
    (args,) = of(ev, ServerArgs)
    assert (args.model, args.tp_size, args.speculative, args.port) == (
        "meta-llama/Llama-3.3-70B-Instruct",
        8,
        "EAGLE3",
        30000,
    )
    assert len(milestones(ev, "init_begin")) == 8 and not milestones(ev, "init_begin", draft=True)
    assert len(milestones(ev, "mem_baseline", draft=False)) == len(milestones(ev, "mem_baseline", draft=True)) == 8
    # draft loads before any KV allocation (eagle_worker_v2 order)
    first_kv = milestones(ev, "kv_alloc")[0]
    assert ev.index(milestones(ev, "load_end", draft=True)[-1]) < ev.index(first_kv)
    assert len(milestones(ev, "kv_alloc", draft=True)) == 8
    assert [b.done for b in bars(ev, "draft_weights")] == [0, 1]
    assert max(b.done for b in bars(ev, "weights")) == 30
    draft_graphs = milestones(ev, "graph_begin", draft=True)
    assert [(m.rank, m.get("what")) for m in draft_graphs] == [("TP0", "draft decode"), ("TP0", "draft extend")]
    verify_end = [m for m in milestones(ev, "graph_end") if m.get("what") == "target verify"][0]
    assert verify_end.get("bs")[:3] == [1, 2, 3] and verify_end.get("elapsed_s") == 17.95
    prefill_bar = [b for b in bars(ev, "capture") if b.label.startswith("Capturing prefill shape")]
    assert prefill_bar[0].bs == 2048 and prefill_bar[-1].done == 4
    timings = milestones(ev, "startup_timings")[0]
    assert timings.get("load_weight") == 71.95 and timings.get("tokenizer_e2e") == 143.12
    decode = [b for b in of(ev, BatchStats) if b.stage == "decode"][-1]  # trailing ", " and cap len fields
    assert (decode.accept_len, decode.accept_rate, decode.gen_throughput, decode.queue_req) == (2.95, 0.65, 512.7, 2)


def test_multinode_node1_global_ranks_no_bars() -> None:
    ev = parse("multinode-node1-tp16.log")
    assert sorted(r.tp_rank for r in of(ev, RankSeen)) == list(range(8, 16))
    assert max(r.tp_rank for r in of(ev, RankSeen)) + 1 == of(ev, ServerArgs)[0].tp_size == 16
    assert not of(ev, BarProgress)
    kv = milestones(ev, "kv_alloc")[0]
    assert kv.get("kv_size_gb") == 26.40  # MLA: one KV size


def test_docker_compose_prefix_dp_attention_ansi() -> None:
    ev = parse("compose-dp-attention-ready.log")
    assert {r.rank for r in of(ev, RankSeen)} == {f"DP{i} TP{i} EP{i}" for i in range(4)}
    first = milestones(ev, "init_begin")[0]
    assert first.line.startswith("[2025-11-29 10:00:05 DP") and "sglang-1" not in first.line
    assert max(b.done for b in bars(ev, "weights")) == 16
    assert milestones(ev, "uvicorn_running")[0].get("url") == "http://0.0.0.0:30000"  # ANSI colours stripped
    assert milestones(ev, "uvicorn_started")[0].get("pid") == 1
    assert len(milestones(ev, "fired_up")) == 1
    decode = of(ev, BatchStats)
    assert decode[-1].rank == "DP3 TP3 EP3" and decode[-1].count == 4


def test_time_only_stamps_roll_over_midnight() -> None:
    ev = parse("old-time-only-midnight.log")
    stamped = [e for e in ev if getattr(e, "t", None) is not None]
    assert stamped[0].at == "23:59:30"
    assert [e.t for e in stamped] == sorted(e.t for e in stamped)  # type: ignore[type-var]
    last = milestones(ev, "graph_begin")[-1]
    assert last.at == "00:00:22" and last.t == 86400 + 22
    assert milestones(ev, "load_end")[0].get("mem_usage_gb") is None  # early-2024 end line has no mem usage


def test_collector_timestamps_foreign_logger_srun_invalid_utf8() -> None:
    ev = parse("wrapped-collector-srun.log")
    assert of(ev, SpeculativeHint)[0].algorithm == "EAGLE"
    args = of(ev, ServerArgs)[0]
    assert args.model == "/models/llama-\u2603" and args.at == "2025-11-29 10:00:01"
    assert [b.done for b in bars(ev, "weights")] == [0, 1]
    assert {m.rank for m in milestones(ev, "load_begin")} == {"TP0", "TP1"}
    assert not of(ev, Failure)  # "…error message … can be ignored." is a warning, not a failure


def test_relaunch_in_same_log_resets_per_launch_state() -> None:
    ev = parse("relaunch-two-launches.log")
    args = of(ev, ServerArgs)
    (launch,) = of(ev, LaunchStarted)
    assert [a.model for a in args] == ["first/model", "second/model"]
    assert ev.index(args[0]) < ev.index(launch) == ev.index(args[1]) - 1
    assert launch.at == args[1].at
    after = ev[ev.index(launch) :]
    assert {r.rank for r in of(after, RankSeen)} == {"TP0", "TP1", "TP2", "TP3"}  # ranks reported again
    assert not any(m.draft for m in of(after, Milestone))  # a new launch's first load is not a draft cycle
    assert [b.bar for b in of(after, BarProgress)] == ["weights"] * 5


# ------------------------------------------------------------------------------------------------ failures


def failures(name: str) -> list[tuple[str, bool, str]]:
    return [(f.kind, f.root_cause, f.line) for f in of(parse(name), Failure)]


def test_oom_while_loading_chain() -> None:
    got = failures("fail-oom-load-0.5.9.log")
    assert [(k, r) for k, r, _ in got] == [("exception", False), ("oom", True), ("other", False)]
    assert got[0][2] == "[2025-11-29 10:01:02 TP5] Scheduler hit an exception: Traceback (most recent call last):"
    assert got[1][2].startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB.")
    assert got[2][2].endswith("Received sigquit from a child process. It usually means the child failed.")
    oom = [f for f in of(parse("fail-oom-load-0.5.9.log"), Failure) if f.root_cause][0]
    assert oom.rank == "TP5"  # the traceback's rank comes from the line that opened it


def test_oom_in_capture_traceback_and_solutions_are_not_failures() -> None:
    got = failures("fail-oom-capture-0.5.23.log")
    assert [(k, r) for k, r, _ in got] == [("exception", False), ("oom", True), ("other", False)]
    assert got[1][2].startswith(
        "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB."
    )


def test_nccl_watchdog_timeout() -> None:
    got = failures("fail-nccl-timeout.log")
    assert got[0][:2] == ("nccl", True) and "Watchdog caught collective operation timeout" in got[0][2]
    assert got[1][:2] == ("nccl", False)  # terminate called after throwing … DistBackendError
    assert [(k, r) for k, r, _ in got[2:]] == [("other", False), ("other", False)]
    ranks = {r.rank for r in of(parse("fail-nccl-timeout.log"), RankSeen)}
    assert {"rank0", "rank1"} <= ranks  # torch's own rank prefixes; the [W…] lines are not failures


def test_port_in_use_after_load() -> None:
    (got,) = failures("fail-port-in-use.log")
    assert got[:2] == ("port_in_use", True) and "[Errno 98]" in got[2]


def test_model_not_found() -> None:
    got = failures("fail-model-not-found.log")
    assert got and all(k == "model_not_found" and r for k, r, _ in got)
    assert got[-1][2].startswith("huggingface_hub.errors.RepositoryNotFoundError: 404")


def test_generic_exception_with_interleaved_rank_line() -> None:
    ev = parse("fail-generic-exception.log")
    got = [(f.kind, f.root_cause, f.rank) for f in of(ev, Failure)]
    assert got == [("exception", False, "TP1"), ("exception", True, "TP1"), ("other", False, None)]
    assert of(ev, Failure)[1].line == "AttributeError: 'NoneType' object has no attribute 'weight_loader'"
    assert len(milestones(ev, "load_end")) == 1  # another rank's line inside the traceback still counts


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[2025-11-29 10:00:00 TP0] The following error message 'x' can be ignored.", None),
        ("[2025-11-29 10:00:00] Ignore import error when loading sglang.srt.models.x: No module named 'y'", None),
        ("[2025-11-29 10:00:00 TP0] port 30236 is in use. Waiting for 15 seconds for rpc_port to be available.", None),
        (
            "[2025-11-29 10:00:00] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds.",
            None,
        ),
        (
            "[rank0]:[W1129 10:00:00.1 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 0] using GPU 0 to perform barrier",
            None,
        ),
        ("[2025-11-29 10:00:00] Port is already in use. dist_init_port=1 port_base=2", ("port_in_use", True)),
        (
            "[2025-11-29 10:00:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
            ("other", True),
        ),
        ("[2025-11-29 10:00:00] Rank 3 scheduler is dead. Please check if there are relevant logs.", ("other", False)),
        (
            "[2025-11-29 10:00:00] Initialization failed. warmup error: Traceback (most recent call last):",
            ("other", False),
        ),
        ("[2025-11-29 10:00:00 TP0] DetokenizerManager hit an exception: CUDA error: out of memory", ("oom", True)),
        ("launch_server.py: error: argument --tp-size: invalid int value: 'x'", ("other", True)),
        # Slurm's reports of its own steps (in a batch log, beside the server's): what a cancel or a crash did to a
        # task, never the server's cause; the job's state says a cancel, the server's own lines say a crash
        ("srun: error: sgtn2: task 1: Terminated", None),
        ("srun: error: gpu-07: task 3: Exited with exit code 1", None),
        ("slurmstepd: error: *** STEP 12.0 ON sgtn1 CANCELLED AT 2026-12-06T19:50:01 ***", None),
        (
            "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 7/8 clients joined.",
            ("nccl", True),
        ),
        ("ValueError: some unrelated value outside any traceback", None),
    ],
)
def test_single_line_failure_classification(line: str, expected: tuple[str, bool] | None) -> None:
    parser = LogParser()
    got = of(parser.feed(line.encode() + b"\n") + parser.flush(), Failure)
    assert (got[0].kind, got[0].root_cause) == expected if expected else not got


def test_traceback_exception_lines_chain_and_generic_runtime_error() -> None:
    log = (
        b"[2025-11-29 10:00:00] Initialization failed. warmup error: Traceback (most recent call last):\n"
        b'  File "/x/http_server.py", line 1, in _execute_server_warmup\n'
        b"requests.exceptions.ConnectionError: Connection refused\n"
        b"Traceback (most recent call last):\n"
        b'  File "/x/engine.py", line 2, in _wait_for_scheduler_ready\n'
        b"RuntimeError: Initialization failed. Please see the error messages above.\n"
    )
    parser = LogParser()
    got = [(f.kind, f.root_cause) for f in of(parser.feed(log), Failure)]
    assert got == [("other", False), ("exception", True), ("other", False)]


def test_asgi_request_traceback_is_not_a_failure() -> None:
    log = (
        b"[2025-11-29 10:00:00] ERROR:    Exception in ASGI application\n"
        b"Traceback (most recent call last):\n"
        b'  File "/x/h11_impl.py", line 403, in run_asgi\n'
        b"KeyError: 'messages'\n"
    )
    parser = LogParser()
    assert not of(parser.feed(log) + parser.flush(), Failure)


def test_speculative_hints() -> None:
    parser = LogParser()
    ev = parser.feed(
        b"[2025-11-29 10:00:00] Spec v2 is enabled for eagle/eagle3 speculative decoding and overlap schedule is turned on.\n"
        b"[2025-11-29 10:00:05 TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.00, accept len: 1.50, "
        b"accept rate: 0.40, cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0\n"
    )
    hints = of(ev, SpeculativeHint)
    assert [h.algorithm for h in hints] == ["EAGLE"]  # a named family is not downgraded by accept-len lines
    parser = LogParser()
    ev = parser.feed(
        b"[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 1, accept len: 2.17, gen throughput (token/s): 0.39, \n"
    )
    assert [h.algorithm for h in of(ev, SpeculativeHint)] == [None]


def test_draft_weight_bar_by_order_without_server_args() -> None:
    """--log-level warning: no INFO lines; a second bar after the main one completed is the draft's."""
    frames = "".join(
        f"\r{desc}: {100 * n // total:3d}% Completed | {n}/{total} [00:0{n}<00:00,  1.00s/it]\n"
        for desc, total in (("Loading safetensors checkpoint shards", 2), ("Loading pt checkpoint shards", 1))
        for n in range(total + 1)
    )
    parser = LogParser()
    ev = of(parser.feed(frames.encode()), BarProgress)
    assert [(b.bar, b.done) for b in ev] == [
        ("weights", 0),
        ("weights", 1),
        ("weights", 2),
        ("draft_weights", 0),
        ("draft_weights", 1),
    ]


def test_interleaved_load_end_of_other_rank_does_not_end_main_bar() -> None:
    """Only rank 0 prints the bar: another rank's Load weight end between frames leaves it the main bar."""
    log = (
        b"Loading safetensors checkpoint shards:  84% Completed | 137/163 [00:43<00:09,  2.77it/s]\n"
        b"[2025-02-09 03:13:36 TP7] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=58.12 GB\n"
        b"Loading safetensors checkpoint shards:  85% Completed | 138/163 [00:44<00:09,  2.76it/s]\n"
    )
    parser = LogParser()
    assert [(b.bar, b.done) for b in of(parser.feed(log), BarProgress)] == [("weights", 137), ("weights", 138)]


def test_event_mix_is_stable_for_a_full_startup() -> None:
    """A guard against silent regressions in what a whole 0.5.9 EAGLE3 startup yields."""
    counts = Counter(type(e).__name__ for e in parse("v0.5.9-tp8-eagle3-ready.log"))
    assert counts["ServerArgs"] == 1 and counts["RankSeen"] == 8 and counts["Failure"] == 0
    # per-rank cycles, graphs, main-process milestones, and (issue 12) TP0's `sglang is using nccl==` (dist_init)
    # and its two `Using KV cache dtype` lines (kv_profile: the KV cache is being sized, main model and draft)
    # and (issue 21) the steps a window of the log may start at: TP0's two `Using model weights format` lines
    # (load_step) and its two `Registering N cuda graph addresses` (graph_step)
    assert counts["Milestone"] == 6 * 16 + 8 * 2 + 16 * 2 + 7 + 1 + 2 + 2 + 2
