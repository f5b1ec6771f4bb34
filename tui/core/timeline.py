"""The phase timeline: one span per main phase, plus the draft model's loading and capture as spans inside them."""

from __future__ import annotations

from dataclasses import replace

from tui.core.state import Phase, PhaseSpan

Timeline = tuple[PhaseSpan, ...]


def span_duration(span: PhaseSpan, now: float | None = None) -> float | None:
    """Seconds the span lasted: from log times when both ends have them, else from the clock (open: until now)."""
    if span.start_t is not None and span.end_t is not None:
        return max(0.0, span.end_t - span.start_t)
    end = span.ended_at if span.ended_at is not None else now
    if end is None:
        return None
    return max(0.0, end - span.started_at)


def _closed(span: PhaseSpan, at: str | None, t: float | None, now: float) -> PhaseSpan:
    span = replace(span, end=at, end_t=t, ended_at=now)
    return replace(span, duration_s=span_duration(span))


def enter_phase(timeline: Timeline, phase: Phase, at: str | None, t: float | None, now: float) -> Timeline:
    """Close the open main span (and any open draft span) and open one for `phase`."""
    closed = close_all(timeline, at, t, now)
    return closed + (PhaseSpan(phase=phase, start=at, start_t=t, started_at=now),)


def close_all(timeline: Timeline, at: str | None, t: float | None, now: float) -> Timeline:
    """Close every open span (a new phase, a failure or a new launch ends them)."""
    if all(s.ended_at is not None for s in timeline):
        return timeline
    return tuple(_closed(s, at, t, now) if s.ended_at is None else s for s in timeline)


def open_draft(
    timeline: Timeline, phase: Phase, at: str | None, t: float | None, now: float, name: str = ""
) -> Timeline:
    """Begin the draft model's span of `phase` called `name` (its capture's name: "draft", "draft extend").
    Once per name: every rank prints the same begin line, and a capture logged in steps begins again."""
    if any(s.model == "draft" and s.phase == phase and s.name == name for s in timeline):
        return timeline
    return timeline + (PhaseSpan(phase=phase, start=at, start_t=t, started_at=now, model="draft", name=name),)


def close_draft(
    timeline: Timeline, phase: Phase, at: str | None, t: float | None, now: float, name: str = ""
) -> Timeline:
    """End the draft span of `phase` called `name`; a later rank's (or step's) end line moves its end."""
    for i in range(len(timeline) - 1, -1, -1):
        span = timeline[i]
        if span.model != "draft" or span.phase != phase or span.name != name:
            continue
        if span.ended_at is None or _later(at, t, now, span):
            return timeline[:i] + (_closed(span, at, t, now),) + timeline[i + 1 :]
        return timeline
    return timeline


def _later(at: str | None, t: float | None, now: float, span: PhaseSpan) -> bool:
    if t is not None and span.end_t is not None:
        return t > span.end_t
    return span.ended_at is not None and now > span.ended_at


def open_span(timeline: Timeline, model: str = "main") -> PhaseSpan | None:
    for span in reversed(timeline):
        if span.model == model and span.ended_at is None:
            return span
    return None
