"""Launch attribution: a new start (a new launch, a new log file, our own launch), our own stop, a stop from outside, with the time windows that tie a death or a restart to what caused it."""

from __future__ import annotations

from dataclasses import replace

from tui.core.clocks import event_time
from tui.core.events import (
    ControlResult,
    LaunchStarted,
    LogReset,
)
from tui.core.explain import from_processes, stopped_line
from tui.core.fold_phase import fail
from tui.core.state import (
    ErrorInfo,
    HealthFacts,
    LaunchFacts,
    Phase,
    ProcessFacts,
    ProgressFacts,
    Readiness,
)
from tui.core.timeline import enter_phase
from tui.core.vocab import ControlAction

STOP_ACTIONS = ("terminate", "kill", "stop")


LAUNCH_ACTIONS = ("launch", "restart")


NEW_FILE_RESETS = ("truncated", "rotated")  # a relaunch with `> LOG`, or a rotation: the new file is a new start


STOP_WINDOW_S = 15.0  # a death this soon after our own stop is that stop


LAUNCH_WINDOW_S = 120.0  # a log restart this soon before our launch's result is that launch (a restart can be slow)


def fresh_launch(
    s: Readiness,
    at: str | None,
    t: float | None,
    now: float,
    *,
    why: str = "new launch",
    counts: bool = True,
    launched: bool = True,
    log_offset: int | None = None,
    from_log: bool = True,
) -> Readiness:
    """A new start: start over, keeping what describes the host and its probes rather than the launch.

    counts: a new launch in the same log (`launches`); from_log: the log itself showed the new start.
    Health results are kept for display, but `health_ready` waits for a /health 200 received after this.
    The log's clock (tui.core.clocks) is the file's, not the launch's: it carries over.
    """
    since = event_time(s, t, now) if from_log else now
    return Readiness(
        launch=LaunchFacts(
            phase_since=since,
            phase_since_log=at,
            first_seen_at=s.first_seen_at,
            timeline=enter_phase((), Phase.STARTING, at, t, since),
            launches=s.launches + 1 if counts else s.launches,
            launched=launched,
            log_restart_at=since if from_log else s.log_restart_at,
        ),
        # what the probes last answered is kept for display; health_ready waits for a 200 after this
        probes=HealthFacts(health=s.health, health_checked_at=s.health_checked_at, health_reachable=s.health_reachable),
        gpu=s.gpu,
        link=replace(s.link, source_failures=()),
        # what the poll said was of the old launch: this one's processes are not found yet. Who can see whose
        # /proc, and who listens on the port, are not the launch's.
        proc=ProcessFacts(
            process_visible=s.process_visible, process_owner_uid=s.process_owner_uid, port_owner=s.port_owner
        ),
        control=s.control,
        progress=ProgressFacts(
            last_progress_at=since,
            last_progress=why,
            last_progress_logged=from_log,
            last_progress_log=at,
            log_offset=s.log_offset if log_offset is None else log_offset,
            last_log_at=at or s.last_log_at,
            last_log_t=t if t is not None else s.last_log_t,
            log_file=s.log_file,
            clock=s.clock,
            reading_history=s.reading_history,
            log_skipped=s.log_skipped,
            log_read_at=s.log_read_at,  # the watch's first read, not the launch's
        ),
        setup=s.setup,  # past included: the caller replaces it when the new launch's key differs
        updated_at=s.updated_at,
    )


def on_launch(s: Readiness, ev: LaunchStarted, now: float) -> Readiness:
    return fresh_launch(s, ev.at, ev.t, now)


def on_log_reset(s: Readiness, ev: LogReset, now: float) -> Readiness:
    """A truncated or rotated log is a new start (the monitor's fresh parser will not say LaunchStarted). Any
    reset but a skip ends the history a look was reading (tui.core.clocks): the next look says what is."""
    if ev.reason in NEW_FILE_RESETS:
        s = s.evolve(reading_history=False)
        return fresh_launch(
            s, None, None, now, why=f"log {ev.reason}", counts=False, launched=launched_by_us(s, now), log_offset=0
        )
    if ev.reason in ("missing", "appeared"):
        return s.evolve(log_offset=0, reading_history=False)
    if ev.reason == "skipped":
        return after_skip(s.evolve(log_skipped=s.log_skipped + max(0, ev.skipped)), now)
    return s


def after_skip(s: Readiness, now: float) -> Readiness:
    """A large log read as its launch's first lines and its last ones. When the first lines already ended that
    launch (failed, or a signal stopped it), the last ones are a later launch's: nothing of the first carries."""
    if s.phase is not Phase.FAILED and s.shutdown is None:
        return s
    return fresh_launch(s, None, None, now, why="log skipped", counts=False, launched=False)


def on_control(s: Readiness, ev: ControlResult, now: float) -> Readiness:
    """Our own launch/restart is a new start (unless the log already showed it); our own stop ends the launch."""
    if ev.ok and ev.action in LAUNCH_ACTIONS:
        shown = (
            s.log_restart_at is not None
            and now - s.log_restart_at <= LAUNCH_WINDOW_S
            and (s.last_control_at is None or s.log_restart_at >= s.last_control_at)
        )
        if not shown:
            s = fresh_launch(s, None, None, now, why=f"{ev.action} by sglang-tui", counts=False, from_log=False)
        return s.evolve(last_control=ev, last_control_at=now, launched=True)
    s = s.evolve(last_control=ev, last_control_at=now)
    if ev.ok and ev.action in STOP_ACTIONS and (s.launched or s.timeline):
        return stopped(s.evolve(process_alive=False, process_pids=()), ev.action, now)
    return s


def stopped_by_us(s: Readiness, now: float) -> bool:
    """Our own stop succeeded shortly before, during this launch."""
    c, when = s.last_control, s.last_control_at
    if c is None or when is None or not c.ok or c.action not in STOP_ACTIONS or now - when > STOP_WINDOW_S:
        return False
    return not s.timeline or when >= s.timeline[0].started_at


def launched_by_us(s: Readiness, now: float, within: float = LAUNCH_WINDOW_S) -> bool:
    c, when = s.last_control, s.last_control_at
    return c is not None and when is not None and c.ok and c.action in LAUNCH_ACTIONS and now - when <= within


def stopped(s: Readiness, action: ControlAction, now: float) -> Readiness:
    """Failed because sglang-tui stopped it: a log line that states another cause (an OOM before) still wins."""
    old = s.error
    if old is None or not old.root_cause or from_processes(old) or old.stopped_by == "outside":
        line = stopped_line(action)
        s = s.evolve(error=ErrorInfo("other", line, root_cause=True, stopped_by="sglang-tui", action=action))
    return fail(s, None, None, now, logged=False)


def stopped_from_outside(
    s: Readiness, line: str, at: str | None, t: float | None, now: float, *, logged: bool = True
) -> Readiness:
    """Failed because a signal from someone else stopped it (SIGTERM, Ctrl-C): that line says why (`logged` False:
    the process watch found it gone, now)."""
    error = ErrorInfo(kind="other", line=line, at=at, root_cause=True, stopped_by="outside")
    return fail(s.evolve(error=error), at, t, now, logged=logged)
