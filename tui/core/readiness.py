"""The readiness reducer: `reduce(state, event, now)` folds one event into the frozen `Readiness` state.

Pure and total: unknown events return the state unchanged; nothing here reads a clock or does IO.
The phase only moves forward (into `failed` from anywhere); a new start starts afresh: a new launch in the log,
a truncated or rotated log (a relaunch the parser cannot see), or a launch/restart by sglang-tui itself.
"""

from __future__ import annotations

from dataclasses import replace
from typing import get_args

from tui.core.events import (
    BarProgress,
    BatchStats,
    ConnectionState,
    ControlResult,
    Event,
    Failure,
    GpuSnapshot,
    HealthResult,
    HostActivity,
    JitHint,
    LaunchStarted,
    LogActivity,
    LogClues,
    LogFile,
    LogLook,
    LogReset,
    Milestone,
    PortOwner,
    ProbeLogged,
    RankSeen,
    ServerArgs,
    ServerInfoAnswer,
    ServerProcess,
    SourceFailed,
    SpeculativeHint,
    Tick,
    WatchdogDump,
    WeightFiles,
)
from tui.core.find_grace import FIND_GRACE_S
from tui.core.fold_bars import BAR_PHASE, on_bar, on_weight_files
from tui.core.fold_gpus import GPU_HISTORY, on_gpus
from tui.core.fold_launch import on_control, on_launch, on_log_reset
from tui.core.fold_log import (
    MILESTONE_PHASE,
    PER_RANK_KINDS,
    infer_tp_size,
    on_batch,
    on_failure,
    on_hint,
    on_jit_hint,
    on_milestone,
    on_rank_seen,
    on_server_args,
    on_watchdog_dump,
    untagged_scheduler_line,
)
from tui.core.fold_phase import health_probed
from tui.core.fold_sources import (
    on_activity,
    on_connection,
    on_health,
    on_log_activity,
    on_log_file,
    on_log_look,
    on_port_owner,
    on_probe_logged,
    on_process,
    on_server_info,
    on_source_failed,
    on_tick,
)
from tui.core.fold_window import note_mid_run
from tui.core.remedy_clues import on_log_clues
from tui.core.stall import stall_for
from tui.core.state import (
    Readiness,
)

__all__ = [
    "reduce",
    "FIND_GRACE_S",
    "infer_tp_size",
    "untagged_scheduler_line",
    "PER_RANK_KINDS",
    "MILESTONE_PHASE",
    "GPU_HISTORY",
    "BAR_PHASE",
    "health_probed",
]


def reduce(state: Readiness, event: Event, now: float) -> Readiness:
    """Fold one event into the state at clock time `now` (seconds)."""
    if type(event) not in _EVENT_TYPES:  # not an event: the reducer is total
        return state
    return _finish(note_mid_run(state, _fold(state, event, now), event), now)


_EVENT_TYPES = frozenset(get_args(Event))


def _fold(s: Readiness, ev: Event, now: float) -> Readiness:
    """The event's own handler, checked by mypy against the event's type (and every event has one: a member of
    Event without its case is a missing return). The frequent events come first: each case is an isinstance."""
    match ev:
        case BarProgress():
            return on_bar(s, ev, now)
        case LogActivity():
            return on_log_activity(s, ev, now)
        case RankSeen():
            return on_rank_seen(s, ev, now)
        case BatchStats():
            return on_batch(s, ev, now)
        case Milestone():
            return on_milestone(s, ev, now)
        case Tick():
            return on_tick(s, ev, now)
        case ProbeLogged():
            return on_probe_logged(s, ev, now)
        case GpuSnapshot():
            return on_gpus(s, ev, now)
        case HostActivity():
            return on_activity(s, ev, now)
        case HealthResult():
            return on_health(s, ev, now)
        case ServerProcess():
            return on_process(s, ev, now)
        case Failure():
            return on_failure(s, ev, now)
        case SpeculativeHint():
            return on_hint(s, ev, now)
        case JitHint():
            return on_jit_hint(s, ev, now)
        case WatchdogDump():
            return on_watchdog_dump(s, ev, now)
        case ServerArgs():
            return on_server_args(s, ev, now)
        case LaunchStarted():
            return on_launch(s, ev, now)
        case LogReset():
            return on_log_reset(s, ev, now)
        case LogFile():
            return on_log_file(s, ev, now)
        case LogLook():
            return on_log_look(s, ev, now)
        case ServerInfoAnswer():
            return on_server_info(s, ev, now)
        case ConnectionState():
            return on_connection(s, ev, now)
        case ControlResult():
            return on_control(s, ev, now)
        case PortOwner():
            return on_port_owner(s, ev, now)
        case SourceFailed():
            return on_source_failed(s, ev, now)
        case WeightFiles():
            return on_weight_files(s, ev, now)
        case LogClues():
            return on_log_clues(s, ev, now)


def _finish(s: Readiness, now: float) -> Readiness:
    """Stamp the clock and apply the stall rule. The words (reason, evidence) are the views' (explain)."""
    if s.first_seen_at is None:  # the first event: the phase began no later than now (not at clock 0)
        s = s.evolve(first_seen_at=now, phase_since=s.phase_since or now)
    stall = stall_for(s, now)
    if stall != s.stall:
        s = s.evolve(stall=stall)
    return replace(s, updated_at=now)
