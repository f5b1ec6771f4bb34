"""The readiness reducer: `reduce(state, event, now)` folds one event into the frozen `Readiness` state.

Pure and total: unknown events return the state unchanged; nothing here reads a clock or does IO.
The phase only moves forward (into `failed` from anywhere); a new start starts afresh: a new launch in the log,
a truncated or rotated log (a relaunch the parser cannot see), or a launch/restart by sglang-tui itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

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
    LogFile,
    LogLook,
    LogReset,
    Milestone,
    PortOwner,
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
    on_process,
    on_server_info,
    on_source_failed,
    on_tick,
)
from tui.core.fold_window import note_mid_run
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


Handler = Callable[[Readiness, object, float], Readiness]


def reduce(state: Readiness, event: Event, now: float) -> Readiness:
    """Fold one event into the state at clock time `now` (seconds)."""
    handler = _HANDLERS.get(type(event))
    if handler is None:
        return state
    new = note_mid_run(state, handler(state, event, now), event)
    return _finish(new, now)


_HANDLERS: dict[type, Handler] = {
    ServerArgs: on_server_args,  # type: ignore[dict-item]
    LaunchStarted: on_launch,  # type: ignore[dict-item]
    RankSeen: on_rank_seen,  # type: ignore[dict-item]
    Milestone: on_milestone,  # type: ignore[dict-item]
    BarProgress: on_bar,  # type: ignore[dict-item]
    Failure: on_failure,  # type: ignore[dict-item]
    BatchStats: on_batch,  # type: ignore[dict-item]
    SpeculativeHint: on_hint,  # type: ignore[dict-item]
    LogActivity: on_log_activity,  # type: ignore[dict-item]
    LogReset: on_log_reset,  # type: ignore[dict-item]
    LogFile: on_log_file,  # type: ignore[dict-item]
    LogLook: on_log_look,  # type: ignore[dict-item]
    GpuSnapshot: on_gpus,  # type: ignore[dict-item]
    HealthResult: on_health,  # type: ignore[dict-item]
    ServerInfoAnswer: on_server_info,  # type: ignore[dict-item]
    ServerProcess: on_process,  # type: ignore[dict-item]
    ConnectionState: on_connection,  # type: ignore[dict-item]
    ControlResult: on_control,  # type: ignore[dict-item]
    PortOwner: on_port_owner,  # type: ignore[dict-item]
    Tick: on_tick,  # type: ignore[dict-item]
    SourceFailed: on_source_failed,  # type: ignore[dict-item]
    HostActivity: on_activity,  # type: ignore[dict-item]
    WatchdogDump: on_watchdog_dump,  # type: ignore[dict-item]
    JitHint: on_jit_hint,  # type: ignore[dict-item]
    WeightFiles: on_weight_files,  # type: ignore[dict-item]
}


def _finish(s: Readiness, now: float) -> Readiness:
    """Stamp the clock and apply the stall rule. The words (reason, evidence) are the views' (explain)."""
    if s.first_seen_at is None:  # the first event: the phase began no later than now (not at clock 0)
        s = s.evolve(first_seen_at=now, phase_since=s.phase_since or now)
    stall = stall_for(s, now)
    if stall != s.stall:
        s = s.evolve(stall=stall)
    return replace(s, updated_at=now)
