"""A relaunch the parser cannot see (a truncated or rotated log) and sglang-tui's own launch/restart start the
model afresh: phases, shards, ranks and errors of the old launch go, host facts stay, and the old /health 200
does not make the new startup ready."""

from __future__ import annotations

from tests.test_readiness_phases import at, feed, ranks, startup
from tui.core.events import (
    BarProgress,
    ConnectionState,
    ControlResult,
    Event,
    GpuInfo,
    GpuSnapshot,
    HealthResult,
    LogActivity,
    LogReset,
    Milestone,
    ServerArgs,
    ServerProcess,
)
from tui.core.explain import evidence
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line

OK = HealthResult("/health", "ok", status=200)
STARTING = HealthResult("/health", "starting", status=503)
GPUS = GpuSnapshot("sim", gpus=(GpuInfo(0, used_bytes=70 << 30, total_bytes=140 << 30),))


def ready_server() -> Readiness:
    """A TP2 launch that the log and /health both call ready, with host facts around it."""
    s = reduce(Readiness(), ConnectionState("connected"), 35990.0)
    s = reduce(s, GPUS, 35991.0)
    s = feed(startup(), s)
    s = reduce(s, LogActivity(50_000), 36021.0)
    s = reduce(s, OK, 36022.0)
    assert s.phase is Phase.READY and s.health_ready and s.log_ready
    return s


def new_launch(sec: int) -> list[Event]:
    """The new launch's first lines in a fresh file: no LaunchStarted (the monitor's parser is a new one)."""
    return [ServerArgs(model="m2", tp_size=2, **at(sec)), *ranks("init_begin", sec + 2)]


def test_a_truncated_log_starts_over_and_keeps_host_facts() -> None:
    s = reduce(ready_server(), LogReset("truncated", "size 10 < offset 50000"), 36100.0)
    assert s.phase is Phase.STARTING and s.phase_since == 36100.0
    assert [span.phase for span in s.timeline] == [Phase.STARTING]
    assert s.shards is None and s.capture is None and s.ranks == () and s.error is None and s.decode is None
    assert not s.log_ready and not s.health_ready and s.log_offset == 0 and s.milestone_ranks == ()
    assert s.launches == 0  # not a second launch in the same log
    assert s.connection == "connected" and s.gpus == GPUS and s.gpu_history
    assert s.health == (OK,) and any(e.startswith("health: /health 200") for e in evidence(s))  # shown, with its age
    assert verdict_line(s) == "waiting for the first log line"


def test_the_new_launch_moves_through_startup_again() -> None:
    s = reduce(ready_server(), LogReset("truncated"), 36100.0)
    s = feed(new_launch(100), s)
    assert s.phase is Phase.INIT and s.server.model == "m2" and s.launches == 0
    s = feed(ranks("load_begin", 104) + [BarProgress("weights", d, 6, **at(105 + d)) for d in range(3)], s)
    assert s.phase is Phase.LOADING_WEIGHTS and s.shards is not None and (s.shards.done, s.shards.total) == (2, 6)
    assert [span.phase for span in s.timeline] == [Phase.STARTING, Phase.INIT, Phase.LOADING_WEIGHTS]


def test_the_old_health_200_does_not_make_the_new_startup_ready() -> None:
    s = reduce(ready_server(), LogReset("rotated", "new file (inode 7)"), 36100.0)
    s = feed(new_launch(100) + ranks("graph_end", 110) + [Milestone("uvicorn_running", **at(112))], s)
    s = feed([Milestone("fired_up", **at(114))], s)
    assert s.phase is Phase.WARMUP and s.log_ready and not s.health_ready  # the 200 it had was the old server's
    assert verdict_line(s).startswith("log says fired up; waiting for /health 200")
    s = reduce(s, STARTING, 36115.0)
    assert s.phase is Phase.WARMUP
    s = reduce(s, OK, 36116.0)
    assert s.phase is Phase.READY and verdict_line(s) == "ready: the log says fired up and /health answers 200"


def test_other_resets_keep_the_launch() -> None:
    for reason in ("missing", "appeared", "started_at_last_launch"):
        s = reduce(ready_server(), LogReset(reason), 36100.0)
        assert s.phase is Phase.READY and s.shards is not None, reason


def test_our_restart_starts_over_before_the_log_shows_it() -> None:
    s = reduce(ready_server(), ControlResult("restart", ok=True, detail="started pid 9"), 36100.0)
    assert s.phase is Phase.STARTING and s.launched and not s.health_ready and s.shards is None
    assert s.launches == 0 and s.last_control is not None and s.last_control.action == "restart"
    assert verdict_line(s) == "launched; waiting for the ranks to start"
    s = reduce(s, LogReset("truncated"), 36101.0)  # its `> LOG` reaches the tail later
    s = feed(new_launch(102), s)
    assert s.phase is Phase.INIT and s.launches == 0 and s.launched


def test_our_restart_after_the_log_showed_it_keeps_the_new_progress() -> None:
    s = reduce(ready_server(), LogReset("truncated"), 36100.0)
    s = feed(new_launch(101), s)
    s = reduce(s, ControlResult("restart", ok=True), 36104.0)  # the result comes back after the new lines
    assert s.phase is Phase.INIT and s.server.model == "m2"
    assert s.last_control is not None and s.last_control.action == "restart"


def test_a_failed_launch_changes_nothing() -> None:
    s = reduce(ready_server(), ControlResult("launch", ok=False, detail="a server is already running"), 36100.0)
    assert s.phase is Phase.READY and s.health_ready


def test_our_launch_of_a_stopped_server_starts_over() -> None:
    s = reduce(ready_server(), ControlResult("terminate", ok=True), 36100.0)
    assert s.phase is Phase.FAILED and verdict_line(s).startswith("stopped by sglang-tui (terminate)")
    s = reduce(s, ControlResult("launch", ok=True), 36200.0)
    assert s.phase is Phase.STARTING and s.error is None and s.process_alive is None


def test_a_server_our_kill_ended_moments_after_its_launch_stays_gone_through_the_next_process_report() -> None:
    """The finder's grace (a launch begun moments ago may not be found yet) is not for a server our own stop ended:
    after `kill done`, the next report (nothing alive) keeps it stopped, so K says "nothing to kill" instead of
    opening a kill dialog for "its processes (none seen yet)" (the tmux test's flake, 2 sizes of 3 in one run)."""
    s = reduce(Readiness(), ConnectionState("connected"), 35990.0)
    s = feed(startup("load_begin"), s)  # a launch 4 s old
    s = reduce(s, ServerProcess(alive=True, pids=(7, 8)), 36004.5)
    s = reduce(s, ControlResult("kill", ok=True, detail="no server process left"), 36005.0)
    assert s.process_alive is False and s.error is not None and s.error.stopped_by == "sglang-tui"
    s = reduce(s, ServerProcess(alive=False, pids=()), 36006.0)  # within the finder's grace of the launch
    assert s.process_alive is False and s.phase is Phase.FAILED
