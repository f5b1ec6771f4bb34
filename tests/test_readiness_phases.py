"""The readiness reducer driven by constructed event sequences: phases, failures, the two readiness facts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypedDict

from tui.core.events import (
    BarProgress,
    BatchStats,
    ConnectionState,
    ControlResult,
    Event,
    Failure,
    HealthResult,
    LaunchStarted,
    LogActivity,
    Milestone,
    RankSeen,
    ServerArgs,
    ServerProcess,
    SpeculativeHint,
    Tick,
)
from tui.core.explain import PROCESS_EXITED, evidence
from tui.core.readiness import FIND_GRACE_S, reduce
from tui.core.report import format_report
from tui.core.state import Phase, Readiness
from tui.core.vocab import MilestoneKind
from tui.core.wording import verdict_line

DAY = "2025-11-29"


class LogTime(TypedDict):
    at: str
    t: float


def at(sec: int) -> LogTime:
    """Log time fields for second `sec` after 10:00:00."""
    return {"at": f"{DAY} 10:{sec // 60:02d}:{sec % 60:02d}", "t": 36000.0 + sec}


def feed(events: Iterable[Event], state: Readiness | None = None, now: float = 36000.0) -> Readiness:
    """Reduce events in order; now = the event's log time when it has one, else the last known."""
    s = state or Readiness()
    for ev in events:
        t = getattr(ev, "t", None)
        now = t if t is not None else now
        s = reduce(s, ev, now)
    return s


def ranks(kind: MilestoneKind, sec: int, n: int = 2, **fields: float) -> list[Milestone]:
    return [Milestone(kind, rank=f"TP{i}", fields=tuple(fields.items()), **at(sec)) for i in range(n)]


def startup(upto: str = "fired_up") -> list[Event]:
    """A TP2 startup in the log, up to and including the milestone `upto`."""
    seq: list[tuple[str, Sequence[Event]]] = [
        ("server_args", [ServerArgs(model="m", tp_size=2, speculative="EAGLE3", **at(0))]),
        ("init_begin", ranks("init_begin", 2)),
        ("load_begin", ranks("load_begin", 4, avail_mem_gb=138.0)),
        ("weights", [BarProgress("weights", d, 4, **at(5 + d)) for d in range(5)]),
        ("load_end", ranks("load_end", 10, avail_mem_gb=120.0, mem_usage_gb=16.5)),
        ("kv_alloc", ranks("kv_alloc", 11)),
        ("graph_begin", ranks("graph_begin", 12)),
        ("capture", [BarProgress("capture", d, 3, bs=3 - d, avail_mem_gb=20.0, **at(12 + d)) for d in range(4)]),
        ("graph_end", ranks("graph_end", 16)),
        ("uvicorn_running", [Milestone("uvicorn_running", **at(18))]),
        ("fired_up", [Milestone("fired_up", **at(20))]),
    ]
    out: list[Event] = []
    for name, events in seq:
        out += events
        if name == upto:
            return out
    raise AssertionError(upto)


def test_initial_state_is_starting_with_a_reason() -> None:
    s = Readiness()
    assert s.phase is Phase.STARTING
    s = reduce(s, Tick(), 5.0)
    assert s.phase is Phase.STARTING and verdict_line(s) == "waiting for the first log line"
    assert s.first_seen_at == 5.0


def test_every_startup_phase_in_order() -> None:
    expected = {
        "server_args": Phase.STARTING,
        "init_begin": Phase.INIT,
        "load_begin": Phase.LOADING_WEIGHTS,
        "load_end": Phase.LOADING_WEIGHTS,
        "kv_alloc": Phase.KV_CACHE,
        "graph_begin": Phase.CUDA_GRAPH,
        "graph_end": Phase.CUDA_GRAPH,
        "uvicorn_running": Phase.WARMUP,
        "fired_up": Phase.READY,
    }
    for upto, phase in expected.items():
        assert feed(startup(upto)).phase is phase, upto
    s = feed(startup())
    assert [span.phase for span in s.timeline] == [
        Phase.STARTING,
        Phase.INIT,
        Phase.LOADING_WEIGHTS,
        Phase.KV_CACHE,
        Phase.CUDA_GRAPH,
        Phase.WARMUP,
        Phase.READY,
    ]
    assert s.timeline[1].start == f"{DAY} 10:00:02" and s.timeline[1].end == f"{DAY} 10:00:04"
    assert s.timeline[1].duration_s == 2.0
    assert s.timeline[-1].end is None and s.timeline[-1].ended_at is None
    assert s.phase_since_log == f"{DAY} 10:00:20"


def test_bars_alone_give_the_phases() -> None:
    s = feed([BarProgress("weights", 1, 2, **at(1))])
    assert s.phase is Phase.LOADING_WEIGHTS and s.shards is not None and (s.shards.done, s.shards.total) == (1, 2)
    s = feed([BarProgress("capture", 0, 4, bs=4, **at(2))], s)
    assert s.phase is Phase.CUDA_GRAPH and s.capture is not None and s.capture.bs == 4


def test_phase_never_moves_backwards() -> None:
    s = feed(startup("graph_begin"))
    s = feed(ranks("init_begin", 13) + ranks("load_begin", 13) + ranks("kv_alloc", 13), s)
    assert s.phase is Phase.CUDA_GRAPH
    assert [span.phase for span in s.timeline if span.model == "main"][-1] is Phase.CUDA_GRAPH


def test_shards_keep_the_max_done_seen() -> None:
    s = feed([BarProgress("weights", d, 10, **at(d)) for d in (1, 5, 3, 4)])
    assert s.shards is not None and s.shards.done == 5


def test_rate_and_eta_from_log_times() -> None:
    s = feed([BarProgress("weights", d, 64, **at(d)) for d in range(0, 11)])  # one shard per second
    bar = s.shards
    assert bar is not None and bar.rate_per_s is not None and abs(bar.rate_per_s - 1.0) < 1e-9
    assert bar.eta_s is not None and abs(bar.eta_s - 54.0) < 1e-9
    assert "10/64 shards, 1.0 shards/s, ETA 54 s" in verdict_line(s)


def test_rate_from_the_clock_when_the_bar_has_no_time() -> None:
    s = Readiness()
    for i, d in enumerate((0, 2, 4, 6)):
        s = reduce(s, BarProgress("weights", d, 8), 100.0 + i * 0.5)  # 4 shards/s by the clock
    assert s.shards is not None and s.shards.rate_per_s == 4.0 and s.shards.eta_s == 0.5
    assert "6/8 shards, 4.0 shards/s, ETA 1 s" in verdict_line(s)


def test_rate_from_tqdm_elapsed_beats_coarse_log_time() -> None:
    # bar frames carry no log time; in a replay `now` is the last log line's second, the same for every frame
    frames = [BarProgress("weights", d, 14, elapsed_s=float(d // 2), remaining_s=7.0 - d / 2) for d in range(0, 9)]
    s = feed(frames, now=36000.0)
    assert s.shards is not None and s.shards.rate_per_s == 2.0 and s.shards.eta_s == 3.0
    assert "8/14 shards, 2.0 shards/s, ETA 3 s" in verdict_line(s)


def test_tqdm_remaining_is_the_eta_until_a_rate_exists() -> None:
    s = feed([BarProgress("weights", 1, 30, elapsed_s=2.0, remaining_s=58.0)], now=5.0)
    assert s.shards is not None and s.shards.rate_per_s is None and s.shards.eta_s == 58.0


def test_rate_is_smoothed_over_the_recent_window() -> None:
    slow = [BarProgress("weights", d, 100, t=float(d * 10)) for d in range(0, 5)]  # 0.1/s for 40 s
    fast = [BarProgress("weights", 4 + d, 100, t=40.0 + d) for d in range(1, 21)]  # then 1/s for 20 s
    s = feed(slow + fast, now=0.0)
    assert s.shards is not None and s.shards.rate_per_s is not None
    assert 0.6 < s.shards.rate_per_s <= 1.0  # the old slow part has mostly left the 30 s window


def test_draft_bar_is_kept_apart_from_the_main_shards() -> None:
    # the parser names the draft's bar (tests/test_parse_draft.py): the reducer keeps it apart
    draft = [BarProgress("draft_weights", 0, 1, **at(10)), BarProgress("draft_weights", 1, 1, **at(11))]
    s = feed(startup("load_end") + draft)
    assert s.shards is not None and (s.shards.done, s.shards.total) == (4, 4)
    assert s.draft_shards is not None and (s.draft_shards.done, s.draft_shards.total) == (1, 1)
    drafts = [span for span in s.timeline if span.model == "draft"]
    assert len(drafts) == 1 and drafts[0].phase is Phase.LOADING_WEIGHTS
    assert drafts[0].duration_s == 1.0


def test_draft_spans_inside_the_main_phases_with_durations() -> None:
    draft_load = [Milestone("load_begin", rank=f"TP{i}", draft=True, **at(30)) for i in range(2)]
    draft_load += [
        Milestone("load_end", rank="TP0", draft=True, **at(33)),
        Milestone("load_end", rank="TP1", draft=True, **at(34)),
    ]
    draft_graph = [
        Milestone("graph_begin", rank="TP0", draft=True, **at(40)),
        Milestone("graph_end", rank="TP0", draft=True, **at(47)),
    ]
    s = feed(startup("graph_end") + draft_load + draft_graph)
    assert s.phase is Phase.CUDA_GRAPH  # draft lines never move the main phase
    drafts = [(span.phase, span.start, span.end, span.duration_s) for span in s.timeline if span.model == "draft"]
    assert drafts == [
        (Phase.LOADING_WEIGHTS, f"{DAY} 10:00:30", f"{DAY} 10:00:34", 4.0),  # the last rank's end line
        (Phase.CUDA_GRAPH, f"{DAY} 10:00:40", f"{DAY} 10:00:47", 7.0),
    ]
    assert dict((r.name, r.last_milestone) for r in s.ranks)["TP0"] == "draft graph_end"


def test_unflagged_second_load_after_capture_is_the_draft() -> None:
    # the parser flags an unflagged second load after capture as the draft's (tests/test_parse_draft.py)
    second = [Milestone(m.kind, m.rank, True, m.fields, m.line, m.at, m.t) for m in ranks("load_begin", 30)]
    second += [Milestone(m.kind, m.rank, True, m.fields, m.line, m.at, m.t) for m in ranks("load_end", 32)]
    s = feed(startup("graph_end") + second)
    assert s.phase is Phase.CUDA_GRAPH
    assert [span.phase for span in s.timeline if span.model == "draft"] == [Phase.LOADING_WEIGHTS]


def test_durations_fall_back_to_the_clock_without_log_times() -> None:
    s = reduce(Readiness(), Milestone("init_begin", rank="TP0"), 10.0)
    s = reduce(s, Milestone("load_begin", rank="TP0"), 25.5)
    assert s.timeline[0].phase is Phase.INIT and s.timeline[0].duration_s == 15.5


# ------------------------------------------------------------------------------------- the readiness facts


def test_fired_up_without_health_info_is_ready() -> None:
    s = feed(startup())
    assert s.phase is Phase.READY and s.log_ready and not s.health_ready
    assert "fired up" in verdict_line(s)


def test_fired_up_needs_health_200_when_health_answers() -> None:
    s = feed(startup("uvicorn_running"))
    s = reduce(s, HealthResult("/health", "starting", status=503), 36019.0)
    s = feed([Milestone("fired_up", **at(20))], s)
    assert s.log_ready and s.phase is Phase.WARMUP
    assert "waiting for /health 200" in verdict_line(s) and "503 starting" in verdict_line(s)
    assert any(e.startswith("health: /health 503 starting") for e in evidence(s))
    s = reduce(s, HealthResult("/health", "ok", status=200), 36022.0)
    assert s.phase is Phase.READY and s.health_ready and s.log_ready
    assert "fired up" in verdict_line(s) and "200" in verdict_line(s)


def test_health_200_alone_is_ready_but_says_so() -> None:
    # issue 17 case 2: a 200 with no log to vouch for it is ready only once SGLang's /model_info answers too
    s = reduce(Readiness(), HealthResult("/health", "ok", status=200), 1.0)
    assert s.phase is Phase.STARTING and s.health_ready and "checking what answers" in verdict_line(s)
    s = reduce(s, HealthResult("/model_info", "ok", status=200, model_path="org/m"), 1.5)
    s = reduce(s, HealthResult("/health", "ok", status=200), 2.0)
    assert s.phase is Phase.READY and s.health_ready and not s.log_ready
    assert "has not said fired up" in verdict_line(s) and "org/m" in verdict_line(s)


def test_health_200_while_the_log_loads_is_not_ready() -> None:
    s = feed(startup("load_begin"))
    s = reduce(s, HealthResult("/health", "ok", status=200), 36005.0)
    assert s.phase is Phase.LOADING_WEIGHTS and s.health_ready
    assert any("another server on this port" in e for e in evidence(s))


def test_health_200_with_a_warning_level_log_is_ready() -> None:
    # --log-level warning: no INFO milestone, only bars; nothing in the log will ever say fired up
    s = feed([BarProgress("weights", 2, 2, **at(1)), BarProgress("capture", 4, 4, bs=1, **at(2))])
    s = reduce(s, HealthResult("/health", "ok", status=200), 36005.0)
    assert s.phase is Phase.READY


def test_v1_models_is_never_readiness() -> None:
    for endpoint in ("/v1/models", "/model_info", "/get_model_info"):
        s = reduce(Readiness(), HealthResult(endpoint, "ok", status=200), 1.0)
        assert s.phase is Phase.WARMUP, endpoint  # evidence that uvicorn is up: warmup at most
        assert not s.health_ready and s.health_reachable
        assert any("not a readiness signal" in e for e in evidence(s))
    s = feed(startup("uvicorn_running"))
    s = reduce(s, HealthResult("/v1/models", "ok", status=200), 36019.0)
    s = feed([Milestone("fired_up", **at(20))], s)
    assert s.phase is Phase.WARMUP  # health answers, but /health itself has not said 200


def test_unreachable_health_after_fired_up_is_not_ready() -> None:
    # issue 17 case 1: the old rule called this ready ("/health gives no HTTP answer to confirm it")
    s = feed(startup("uvicorn_running"))
    s = reduce(s, HealthResult("/health", "refused"), 36019.0)
    s = feed([Milestone("fired_up", **at(20))], s)
    assert s.phase is Phase.WARMUP  # that refusal predates the fired-up line: uvicorn may answer now
    s = reduce(s, HealthResult("/health", "refused"), 36021.0)
    assert s.phase is Phase.WARMUP and not s.health_reachable
    assert verdict_line(s).startswith("up but not answering /health for 1.0s (last: /health refused")


def test_a_probe_after_fired_up_that_answers_503_holds_ready_back() -> None:
    s = feed(startup("uvicorn_running"))
    s = reduce(s, HealthResult("/health", "refused"), 36019.0)
    s = feed([Milestone("fired_up", **at(20))], s)
    s = reduce(s, HealthResult("/health", "starting", status=503), 36021.0)
    assert s.phase is Phase.WARMUP and s.log_ready and s.health_reachable


def test_health_results_are_kept_latest_per_endpoint() -> None:
    s = reduce(Readiness(), HealthResult("/health", "refused"), 1.0)
    s = reduce(s, HealthResult("/v1/models", "refused"), 2.0)
    s = reduce(s, HealthResult("/health", "starting", status=503), 3.0)
    assert [(r.endpoint, r.outcome) for r in s.health] == [("/v1/models", "refused"), ("/health", "starting")]
    assert dict(s.health_checked_at) == {"/v1/models": 2.0, "/health": 3.0}


# ---------------------------------------------------------------------------------------------- serving


def test_decode_after_ready_is_serving() -> None:
    s = feed(
        startup() + [BatchStats("decode", gen_throughput=598.3, accept_len=3.21, running_req=4, rank="TP0", **at(30))]
    )
    assert s.phase is Phase.SERVING
    assert s.decode is not None and s.decode.accept_len == 3.21 and s.decode.gen_throughput == 598.3
    assert verdict_line(s) == "serving: 4 running, 598.3 tok/s, accept len 3.21"


def test_log_attached_mid_run_with_only_decoding_is_serving() -> None:
    events = [BatchStats("prefill", running_req=0, **at(0))]
    events += [
        BatchStats("decode", gen_throughput=100.0 + i, accept_len=1.8, running_req=1, rank="TP0", **at(1 + i))
        for i in range(3)
    ]
    s = feed(events)
    assert s.phase is Phase.SERVING
    assert s.server.speculative == "unknown"  # accept lengths but no algorithm named
    assert s.server.tp_size is None  # a lone TP0 tag says TP > 1, not how many
    assert s.decode is not None and s.decode.gen_throughput == 102.0
    assert len(s.decode_history) == 3


def test_decode_history_is_bounded() -> None:
    s = feed(startup())
    s = feed([BatchStats("decode", gen_throughput=float(i), running_req=1, t=36100.0 + i) for i in range(300)], s)
    assert len(s.decode_history) == 120 and s.decode_history[-1][1] == 299.0


def test_decode_during_loading_does_not_skip_phases() -> None:
    s = feed(startup("load_begin") + [BatchStats("decode", gen_throughput=5.0, running_req=1, **at(6))])
    assert s.phase is Phase.LOADING_WEIGHTS


# --------------------------------------------------------------------------------------------- failures


def test_failure_from_any_phase() -> None:
    for upto in ("server_args", "load_begin", "graph_begin", "fired_up"):
        s = feed(startup(upto) + [Failure("oom", "torch.OutOfMemoryError: CUDA out of memory.", rank="TP3", **at(25))])
        assert s.phase is Phase.FAILED, upto
        assert s.error is not None and s.error.kind == "oom"
        assert s.timeline[-1].phase is Phase.FAILED and s.timeline[-2].end == f"{DAY} 10:00:25"


def test_root_cause_beats_a_generic_marker_and_the_first_root_cause_wins() -> None:
    marker = Failure("exception", "[10:00:01 TP4] Scheduler hit an exception: Traceback", root_cause=False, **at(1))
    cause = Failure("oom", "torch.OutOfMemoryError: CUDA out of memory.", **at(1))
    noise = Failure("nccl", "torch.distributed.DistBackendError: NCCL error", **at(2))
    sigquit = Failure("other", "Received sigquit from a child process.", root_cause=False, **at(2))
    s = feed([marker, cause, noise, sigquit])
    assert s.error is not None and (s.error.kind, s.error.line) == ("oom", cause.line)
    assert verdict_line(s) == f"failed (out of memory): {cause.line}"
    s = feed([marker, Failure("other", "Initialization failed.", root_cause=False, **at(3))])
    assert s.error is not None and s.error.line == marker.line  # only markers: the first one


def test_dead_process_before_ready_is_failed_not_stalled() -> None:
    s = feed(startup("load_begin"))
    s = reduce(s, ServerProcess(alive=False), 36100.0)
    assert s.phase is Phase.FAILED and s.stall is None
    assert s.error is not None and (s.error.kind, s.error.line) == ("other", PROCESS_EXITED)
    assert "dead process, not a stall" in verdict_line(s) and not any(
        e.startswith("log: server process") for e in evidence(s)
    )
    s = feed([Failure("oom", "torch.OutOfMemoryError: CUDA out of memory.", **at(101))], s)
    assert s.error is not None and verdict_line(s).startswith(
        "failed in loading weights (out of memory)"
    )  # a late cause line still counts


def test_a_new_process_after_a_death_waits_for_its_launch_line() -> None:
    s = reduce(feed(startup("load_begin")), ServerProcess(alive=False), 36100.0)
    s = reduce(s, ServerProcess(alive=True, pids=(9,)), 36101.0)
    assert s.phase is Phase.FAILED and "a new one runs" in verdict_line(s)
    s = feed([LaunchStarted(**at(102)), ServerArgs(tp_size=2, **at(102))], s)
    assert s.phase is Phase.STARTING and s.process_alive is None  # the new launch's processes: not found yet


def test_dead_process_without_a_launch_is_not_failed() -> None:
    s = reduce(Readiness(), ServerProcess(alive=False), 1.0)
    assert s.phase is Phase.STARTING
    s = reduce(s, ControlResult("launch", ok=True), 2.0)
    s = reduce(s, ServerProcess(alive=False), 6.0)
    assert s.phase is Phase.STARTING  # the poll may not have found the new server yet
    s = reduce(s, ServerProcess(alive=False), 2.0 + FIND_GRACE_S + 1.0)
    assert s.phase is Phase.FAILED  # still none: it is gone


def test_a_new_launch_seen_alive_then_gone_fails_at_once() -> None:
    s = feed(startup("server_args"))
    s = reduce(reduce(s, ServerProcess(alive=True, pids=(4,)), 36001.0), ServerProcess(alive=False), 36002.0)
    assert s.phase is Phase.FAILED and s.error is not None and s.error.line == PROCESS_EXITED


def test_dead_process_after_ready_is_failed_not_ready() -> None:
    for upto in ([], [BatchStats("decode", running_req=2, gen_throughput=80.0, **at(30))]):
        s = feed(startup() + upto)
        assert s.phase in (Phase.READY, Phase.SERVING)
        s = reduce(s, ServerProcess(alive=False, detail="server processes gone"), 36100.0)
        assert s.phase is Phase.FAILED and s.phase_since == 36100.0 and s.stall is None
        assert s.error is not None and (s.error.kind, s.error.line) == ("other", PROCESS_EXITED)
        assert verdict_line(s).startswith("failed: server process exited")
        assert s.timeline[-1].phase is Phase.FAILED


def test_stopped_by_the_user_says_so() -> None:
    s = feed(startup("load_begin"))
    s = reduce(s, ControlResult("terminate", ok=True, command="kill -TERM -- -123"), 36010.0)
    s = reduce(s, ServerProcess(alive=False), 36011.0)
    assert s.phase is Phase.FAILED and verdict_line(s) == "stopped by sglang-tui (terminate) during loading weights"
    assert s.error is not None and s.error.stopped_by == "sglang-tui" and s.error.action == "terminate"
    assert s.error is not None and s.error.line == "stopped by sglang-tui (terminate)"
    assert s.last_control is not None and s.last_control.action == "terminate"


def test_a_kill_after_ready_is_stopped_by_the_tool_in_either_order() -> None:
    # the process poll may see the death before the kill's result comes back, or after it
    for first, second in ((ControlResult("kill", ok=True), ServerProcess(alive=False)),
                          (ServerProcess(alive=False), ControlResult("kill", ok=True))):  # fmt: skip
        s = feed(startup())
        s = reduce(reduce(s, first, 36050.0), second, 36051.0)
        assert s.phase is Phase.FAILED and verdict_line(s).startswith("stopped by sglang-tui (kill)")
        s = feed([Failure("exception", "Traceback … KeyboardInterrupt", **at(52))], s)
        assert verdict_line(s).startswith("stopped by sglang-tui (kill)")  # the kill's own noise is not the cause


def test_a_stop_long_ago_or_a_failed_one_is_not_the_cause() -> None:
    s = reduce(feed(startup()), ControlResult("kill", ok=False, survivors=(7,)), 36050.0)
    assert s.phase is Phase.READY  # a kill that left survivors stops nothing
    s = reduce(s, ServerProcess(alive=False), 36051.0)
    assert verdict_line(s).startswith("failed: server process exited")
    s = reduce(Readiness(), ControlResult("terminate", ok=True, detail="nothing to stop"), 35995.0)
    s = feed(startup("load_begin"), s)  # a launch after that stop: its death 11 s later is not our stop
    s = reduce(reduce(s, ServerProcess(alive=True, pids=(5,)), 36005.0), ServerProcess(alive=False), 36006.0)
    assert s.error is not None and s.error.line == PROCESS_EXITED


def test_a_log_failure_keeps_its_cause_when_the_user_stops_the_rest() -> None:
    oom = Failure("oom", "torch.OutOfMemoryError: CUDA out of memory.", **at(6))
    s = reduce(feed(startup("load_begin") + [oom]), ControlResult("kill", ok=True), 36050.0)
    assert verdict_line(s) == f"failed in loading weights (out of memory): {oom.line}"


def test_the_first_event_starts_the_phase_clock() -> None:
    for first in (Tick(), HealthResult("/health", "refused"), ConnectionState("connected"), LogActivity(10, b"x")):
        s = reduce(Readiness(), first, 1_764_410_000.0)
        assert s.phase_since == 1_764_410_000.0 and s.first_seen_at == 1_764_410_000.0, first
    s = reduce(reduce(Readiness(), Tick(), 100.0), Tick(), 160.0)
    assert s.phase_since == 100.0


# ------------------------------------------------------------------------------------------ new launches


def test_launch_started_resets_to_a_fresh_startup() -> None:
    s = feed(startup("load_begin") + [Failure("oom", "CUDA out of memory", **at(6))])
    s = reduce(s, ConnectionState("connected"), 36007.0)
    s = feed([LaunchStarted(**at(50)), ServerArgs(model="m2", tp_size=4, **at(50))], s)
    assert s.phase is Phase.STARTING and s.launches == 1 and s.error is None and s.shards is None
    assert s.server.model == "m2" and s.server.tp_size == 4 and s.ranks == ()
    assert [span.phase for span in s.timeline] == [Phase.STARTING]
    assert s.connection == "connected"  # host facts survive a relaunch
    s = feed(ranks("init_begin", 52, n=4), s)
    assert s.phase is Phase.INIT


def test_server_args_after_progress_is_a_relaunch() -> None:
    s = feed(startup("kv_alloc") + [ServerArgs(model="again", tp_size=2, **at(60))])
    assert s.phase is Phase.STARTING and s.launches == 1 and s.server.model == "again"


# ------------------------------------------------------------------------------------ server facts, ranks


def test_tp_size_from_args_or_the_highest_rank() -> None:
    assert feed([Milestone("load_end", rank="TP7", **at(1))]).server.tp_size == 8
    s = feed([ServerArgs(tp_size=16, **at(0)), Milestone("load_end", rank="TP7", **at(1))])
    assert s.server.tp_size == 16
    # a lone TP3 (a TP8's rank as well as a TP4's) and ranks past one node's GPUs are lower bounds, not sizes
    assert feed([Milestone("load_end", rank="DP1 TP3", **at(1))]).server.tp_size is None
    s = feed([Milestone("load_end", rank=f"TP{i}", **at(1)) for i in range(16)])
    assert (
        s.server.tp_size is None
        and "log: tp ≥ 16: ranks TP0–TP15 seen (a lower bound: no line states the size)" in evidence(s)
    )
    s = feed([Milestone("load_end", rank=f"TP{i}", **at(1)) for i in range(24, 32)])
    assert s.server.tp_size is None and "tp ≥ 32: ranks TP24–TP31 seen" in format_report(s)


def test_tp_size_from_torch_rank_prefixes() -> None:
    s = feed([RankSeen("rank0", 0, **at(0)), RankSeen("rank7", 7, **at(0)), RankSeen("TP0", 0, **at(1))])
    assert s.server.tp_size == 8
    assert feed([RankSeen("TP0", 0, **at(1))]).server.tp_size is None


def test_speculative_from_args_or_hints() -> None:
    assert feed([SpeculativeHint(algorithm="EAGLE", **at(0))]).server.speculative == "EAGLE"
    assert feed([SpeculativeHint(algorithm=None, **at(0))]).server.speculative == "unknown"
    s = feed([SpeculativeHint(algorithm="EAGLE", **at(0)), ServerArgs(speculative="EAGLE3", **at(1))])
    assert s.server.speculative == "EAGLE3"
    s = feed([ServerArgs(speculative="EAGLE3", **at(1)), SpeculativeHint(algorithm="EAGLE", **at(2))])
    assert s.server.speculative == "EAGLE3"


def test_per_rank_state_from_milestones() -> None:
    s = feed(startup("load_end")[1:] + [Milestone("load_end", rank="TP10", fields=(("avail_mem_gb", 1.0),), **at(10))])
    names = [r.name for r in s.ranks]
    assert names == ["TP0", "TP1", "TP10"]  # natural order
    tp0 = s.ranks[0]
    assert tp0.last_milestone == "load_end" and tp0.avail_mem_gb == 120.0 and tp0.mem_usage_gb == 16.5
    assert "log: Load weight end on 3/≥11 ranks 10:00:10" in evidence(s)  # TP10 seen: 11 ranks at least


def test_tp1_milestones_without_rank_belong_to_tp0() -> None:
    s = feed([ServerArgs(tp_size=1, **at(0)), Milestone("load_begin", fields=(("avail_mem_gb", 63.55),), **at(1))])
    assert [(r.name, r.avail_mem_gb) for r in s.ranks] == [("TP0", 63.55)]
    assert s.server.tp_size == 1


def test_log_activity_connection_and_control_are_stored() -> None:
    s = reduce(Readiness(), LogActivity(offset=4096, data=b"x"), 1.0)
    assert s.log_offset == 4096 and s.last_progress == "log bytes"
    s = reduce(s, ConnectionState("reconnecting", "connection lost"), 2.0)
    s = reduce(s, ConnectionState("reconnecting", "retry 2"), 3.0)
    assert (s.connection, s.connection_detail, s.connection_since) == ("reconnecting", "retry 2", 2.0)
    assert "link: reconnecting retry 2" in evidence(s)
    result = ControlResult("kill", ok=False, detail="2 survivors", survivors=(12, 13))
    assert reduce(s, result, 4.0).last_control == result


def test_unknown_events_leave_the_state_unchanged() -> None:
    s = feed(startup("load_begin"))
    assert reduce(s, object(), 1e9) is s  # type: ignore[arg-type]
    assert reduce(s, "text", 1e9) is s  # type: ignore[arg-type]
