"""A watched launch as a history row: its key, phases, shards, bytes and outcome, read off the final state."""

from __future__ import annotations

from tui.core.launchkey import key_fields, launch_key
from tui.core.state import Phase, PhaseSpan, Readiness
from tui.history.store import LaunchRecord

LIVE_AGREE_S = 1.5  # a span's clock and log durations this close: it was watched live, and the clock is finer
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


def start_mark(state: Readiness) -> str | None:
    """What identifies this launch across watchers: the log time of its first span (else the clock)."""
    if not state.timeline:
        return None
    first = state.timeline[0]
    return f"log {first.start}" if first.start else f"clock {first.started_at:.3f}"


def span_seconds(span: PhaseSpan, now: float) -> float | None:
    """The span's duration: the clock's when it agrees with the log's (watched live: sub-second), else the log's;
    an open span (a stalled or unfinished launch) runs until `now`."""
    by_log = span.duration_s if span.start_t is not None and span.end_t is not None else None
    end = span.ended_at if span.ended_at is not None else now
    by_clock = max(0.0, end - span.started_at)
    if by_log is None:
        return by_clock
    if abs(by_clock - by_log) <= LIVE_AGREE_S:
        return by_clock
    return by_log


def to_record(state: Readiness, host: str, source: str, outcome: str | None = None) -> LaunchRecord | None:
    """The row for this state's launch; None when there is no launch to record (no server_args seen)."""
    key = launch_key(state.server, host)
    mark = start_mark(state)
    if key is None or mark is None:
        return None
    outcome = outcome or outcome_of(state) or "unfinished"
    phases = []
    total = 0.0
    for span in state.timeline:
        if span.phase in SKIPPED:
            continue
        seconds = span_seconds(span, state.updated_at)
        phases.append((span.phase.value, span.model, span.start, span.end, seconds))
        if span.model == "main" and seconds is not None:
            total += seconds
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
        total_s=total if outcome == "ready" else None,
        shards=state.shards.total if state.shards is not None else None,
        draft_shards=state.draft_shards.total if state.draft_shards is not None else None,
        weight_gib_per_rank=state.weights_mem.peak_gib if state.weights_mem is not None else None,
        phases=tuple(phases),
        startup_timings=dict(state.startup_timings or state.startup_time),
        startup_time_s=dict(state.startup_time).get("tokenizer_e2e"),  # /server_info's startup_time (0.5.23)
    )
