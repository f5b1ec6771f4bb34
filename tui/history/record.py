"""A watched launch as a history row: its key, phases, shards, bytes and outcome, read off the final state.

Durations come from the log's clock (its timestamps), so every look at one launch, from its first line or long
after it was ready, records the same phases. The reducer's clock times a phase only when the watcher saw it live
(`seen_from` "first_line") and the log gave that phase no stamp at one end; a launch first seen after its outcome
("late") records such a phase with no duration: it is left out of medians, never guessed from the moment we looked."""

from __future__ import annotations

from tui.core.launchkey import key_fields, launch_key, start_mark
from tui.core.state import Phase, PhaseSpan, Readiness
from tui.history.store import LaunchRecord

FIRST_LINE = "first_line"  # the watcher saw the launch before its outcome: phases it saw end were timed live
LATE = "late"  # first seen after its outcome (ready, failed): only the phases the log's own stamps time
SKIPPED = (Phase.READY, Phase.SERVING, Phase.FAILED)


def outcome_of(state: Readiness) -> str | None:
    """ready | failed | stalled | stopped, or None while the launch is still starting."""
    if state.phase in (Phase.READY, Phase.SERVING):
        return "ready"
    if state.phase is Phase.FAILED:
        if state.error is not None and state.error.stopped_by == "sglang-tui":  # our own stop, by its field
            return "stopped"
        return "failed"
    if state.stall is not None:
        return "stalled"
    return None


def span_seconds(span: PhaseSpan, now: float, seen_from: str = FIRST_LINE) -> float | None:
    """The span's duration on the log's clock when both its ends carry a log time; else, for a launch watched from
    before its outcome, the reducer's clock (an open span, a stalled or unfinished launch, runs until `now`); for a
    late one, None: the clock there would time our look, not the server."""
    if span.start_t is not None and span.end_t is not None:
        return max(0.0, span.end_t - span.start_t)
    if seen_from != FIRST_LINE:
        return None
    end = span.ended_at if span.ended_at is not None else now
    return max(0.0, end - span.started_at)


def total_seconds(
    state: Readiness, phases: list[tuple[str, str, str | None, str | None, float | None]]
) -> float | None:
    """First line to ready: the log's span from the first phase's stamp to the fired-up stamp when both are known,
    else the sum of the main phases when every one is timed, else None."""
    first = state.timeline[0] if state.timeline else None
    ready = next((s for s in state.timeline if s.phase in (Phase.READY, Phase.SERVING) and s.model == "main"), None)
    if first is not None and ready is not None and first.start_t is not None and ready.start_t is not None:
        return max(0.0, ready.start_t - first.start_t)
    mains = [seconds for _phase, model, _s, _e, seconds in phases if model == "main"]
    return sum(d for d in mains if d is not None) if mains and all(d is not None for d in mains) else None


def to_record(
    state: Readiness,
    host: str,
    source: str,
    outcome: str | None = None,
    *,
    port: int = 0,
    log: str = "",
    seen_from: str = FIRST_LINE,
) -> LaunchRecord | None:
    """The row for this state's launch of the server on `port` writing `log`; None when there is no launch to
    record (no server_args seen)."""
    key = launch_key(state.server, host)
    mark = start_mark(state)
    if key is None or mark is None:
        return None
    outcome = outcome or outcome_of(state) or "unfinished"
    phases = []
    for span in state.timeline:
        if span.phase in SKIPPED:
            continue
        seconds = span_seconds(span, state.updated_at, seen_from)
        phases.append((span.phase.value, span.model, span.start, span.end, seconds))
    error = state.error if state.phase is Phase.FAILED else None
    return LaunchRecord(
        key=key,
        key_fields=key_fields(state.server, host),
        start_mark=mark,
        source=source,
        outcome=outcome,
        started_at=state.timeline[0].start_t or state.timeline[0].started_at,
        fail_kind=error.kind if error is not None else None,
        fail_line=error.line.strip()[:500] if error is not None else None,
        total_s=total_seconds(state, phases) if outcome == "ready" else None,
        shards=state.shards.total if state.shards is not None else None,
        draft_shards=state.draft_shards.total if state.draft_shards is not None else None,
        weight_gib_per_rank=state.weights_mem.peak_gib if state.weights_mem is not None else None,
        phases=tuple(phases),
        startup_timings=dict(state.startup_timings or state.startup_time),
        startup_time_s=dict(state.startup_time).get("tokenizer_e2e"),  # /server_info's startup_time (0.5.23)
        port=port,
        log=log,
        seen_from=seen_from,
        tried=_tried(state, mark),
    )


def _tried(state: Readiness, mark: str) -> dict[str, object] | None:
    """The remedy this launch ran with; never on the launch that failed (a record of it after the restart was
    asked for, as its stop lands, still has its own start mark)."""
    tried = state.tried_change
    return tried.to_json() if tried is not None and tried.after != mark else None
