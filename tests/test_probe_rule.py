"""`probe`'s one rule (tui.core.probe_rule): the exit for each verdict, per mode, over states folded by the
reducer from events as the sources send them. Pure: no process is started."""

from __future__ import annotations

import pytest

from tests.test_readiness_phases import feed, startup
from tui.core.events import (
    ConnectionState,
    ControlResult,
    Failure,
    HealthResult,
    LogFile,
    ServerProcess,
    Tick,
)
from tui.core.probe_rule import probe_verdict, quiet_and_budget
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness

OK = HealthResult("/health", "ok", status=200)
HUNG = HealthResult("/health", "timeout", detail="no answer in time")
ALIVE = ServerProcess(alive=True, pids=(7,))
PROBED = Readiness.of(health_probed=True, health_port=30000, log_watched=True, process_watched=True)


def loading() -> Readiness:
    """Mid-load: the startup up to its shard bar, the process alive."""
    return reduce(feed(startup("weights"), PROBED), ALIVE, 36010.0)


def ready() -> Readiness:
    s = reduce(feed(startup(), PROBED), ALIVE, 36020.5)
    s = reduce(s, OK, 36021.0)
    assert s.phase is Phase.READY
    return s


def test_starting_is_alive_and_not_ready() -> None:
    s = loading()
    assert s.phase is Phase.LOADING_WEIGHTS and s.stall is None
    alive, ready_ = probe_verdict(s, "alive", 36011.0), probe_verdict(s, "ready", 36011.0)
    assert (alive.code, alive.kind) == (0, "starting")
    assert (ready_.code, ready_.kind) == (7, "starting")  # as `wait` at its deadline
    assert ready_.line.startswith("loading weights: ")  # the header's verdict line, word for word


def test_ready_is_zero_for_both_and_a_later_health_failure_only_fails_ready() -> None:
    s = ready()
    assert probe_verdict(s, "ready", 36022.0).code == 0
    assert probe_verdict(s, "alive", 36022.0).code == 0
    s = reduce(s, HUNG, 36060.0)  # the server stopped answering: the phase stays ready, /health does not
    assert s.phase is Phase.READY
    found = probe_verdict(s, "ready", 36060.0)
    assert (found.code, found.kind) == (7, "not_answering")
    assert "/health does not answer 200 now (last: timeout)" in found.line
    assert probe_verdict(s, "alive", 36060.0).code == 0  # a livenessProbe does not restart it for that


def test_no_health_ready_rests_on_the_log_alone() -> None:
    s = reduce(feed(startup(), Readiness.of(health_probed=False, log_watched=True, process_watched=True)), ALIVE, 36021)
    assert s.phase is Phase.READY
    assert probe_verdict(s, "ready", 36022.0).code == 0


def test_stalled_is_three_for_both_modes_and_names_the_budget() -> None:
    s = reduce(loading().evolve(stall_after=30.0), Tick(), 36100.0)  # silent since the last bar (36009)
    assert s.stall is not None
    for mode in ("alive", "ready"):
        found = probe_verdict(s, mode, 36100.0)
        assert (found.code, found.kind) == (3, "stalled")
        assert found.line.startswith("stalled in loading weights: no progress on any signal for ")
    quiet, budget = quiet_and_budget(s, 36100.0)
    assert budget == 30.0 and quiet is not None and quiet > budget


def test_a_failure_and_a_stop_are_one() -> None:
    s = feed([Failure("oom", "torch.OutOfMemoryError: CUDA out of memory")], loading())
    found = probe_verdict(s, "alive", 36012.0)
    assert (found.code, found.kind) == (1, "failed") and found.line.startswith(
        "failed in loading weights (out of memory): torch.OutOfMemoryError"
    )
    stopped = reduce(loading(), ControlResult("terminate", True, "terminated"), 36012.0)
    assert stopped.phase is Phase.FAILED
    assert (probe_verdict(stopped, "alive", 36013.0).code, probe_verdict(stopped, "alive", 36013.0).kind) == (
        1,
        "stopped",
    )


def test_a_dead_process_is_failed_not_stalled() -> None:
    s = reduce(loading().evolve(stall_after=1.0), ServerProcess(alive=False), 36100.0)
    assert s.phase is Phase.FAILED and s.stall is None
    assert probe_verdict(s, "alive", 36100.0).code == 1  # at once: the log's cause, if it follows, changes words only


def test_cannot_connect_is_four_and_a_directory_log_two() -> None:
    s = reduce(PROBED, ConnectionState("failed", "host key verification failed"), 1.0)
    found = probe_verdict(s, "alive", 1.0)
    assert (found.code, found.kind) == (4, "cannot_connect") and "host key verification failed" in found.line
    s = reduce(PROBED, LogFile("directory", "/var/log/sglang"), 1.0)
    found = probe_verdict(s, "alive", 1.0)
    assert found.code == 2 and found.line.endswith("pass the log file inside it")


@pytest.mark.parametrize(("mode", "code"), [("alive", 0), ("ready", 7)])
def test_catching_up_on_a_large_log_says_how_much_is_left(mode: str, code: int) -> None:
    found = probe_verdict(loading(), mode, 36011.0, unread=48 << 20)  # type: ignore[arg-type]
    assert (found.code, found.kind) == (code, "catching_up")
    assert found.line.startswith("reading the log: 48.0 MiB left to read")


def test_a_failure_wins_over_catching_up() -> None:
    s = feed([Failure("nccl", "NCCL error: unhandled system error")], loading())
    assert probe_verdict(s, "alive", 36012.0, unread=1 << 30).code == 1
