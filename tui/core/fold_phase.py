"""Phase moves: forward only, failed from anywhere, and the readiness rule (dead is never ready; a 200 counts when it is this server's)."""

from __future__ import annotations

from tui.core.answerer import OURS, answerer
from tui.core.clocks import event_time
from tui.core.state import (
    PHASE_ORDER,
    Phase,
    Readiness,
)
from tui.core.timeline import enter_phase

PHASE_RANK = {phase: i for i, phase in enumerate(PHASE_ORDER)}


def advance(
    s: Readiness,
    target: Phase,
    at: str | None,
    t: float | None,
    now: float,
    *,
    logged: bool = True,
    since: float | None = None,
) -> Readiness:
    """Move to `target` when it is ahead of the current phase (failed is final until a new launch); the phase
    began when the line that shows it was written (tui.core.clocks), else now (`logged` False: another source's
    event, HTTP or the process watch), unless the caller knows the moment (`since`, on our clock)."""
    if s.phase is Phase.FAILED or PHASE_RANK[target] <= PHASE_RANK[s.phase]:
        return s
    if since is None:
        since = event_time(s, t, now, logged)
    return s.evolve(
        phase=target,
        phase_since=since,
        phase_since_log=at,
        timeline=enter_phase(s.timeline, target, at, t, since),
    )


def fail(s: Readiness, at: str | None, t: float | None, now: float, *, logged: bool = True) -> Readiness:
    if s.phase is Phase.FAILED:
        return s
    since = event_time(s, t, now, logged)
    return s.evolve(
        phase=Phase.FAILED,
        phase_since=since,
        phase_since_log=at,
        timeline=enter_phase(s.timeline, Phase.FAILED, at, t, since),
        launched=True,
    )


def maybe_ready(s: Readiness, at: str | None, t: float | None, now: float, *, logged: bool = True) -> Readiness:
    """Ready needs this server's /health 200; the log's fired-up line (or, with no launch in view, its access line of
    a /health 200) alone only when /health is not probed. Another source's word (`logged` False: a /health 200, the
    process watch) waits while the bytes a look found are read: they may show a later launch, or its failure."""
    if s.phase in (Phase.READY, Phase.SERVING, Phase.FAILED) or (s.reading_history and not logged):
        return s
    if (s.log_ready or s.health_ready or s.log_health is not None) and may_be_ready(s):
        if not logged and s.log_ready and s.log_ready_at is not None:
            # the 200 confirms what the log said: ready began at the fired-up line, on the log's clock, not when
            # we happened to look (an attach 40 s after ready must not make the warmup 40 s longer)
            stamp_at, stamp_t = s.log_ready_stamp
            return advance(s, Phase.READY, stamp_at, stamp_t, now, since=min(now, s.log_ready_at))
        return advance(s, Phase.READY, at, t, now, logged=logged)
    return s


def may_be_ready(s: Readiness) -> bool:
    """Whether the facts allow ready (or serving) now.

    Dead is never ready. A /health 200 counts when it is this server's (see tui.core.answerer). Without one,
    the log alone decides only where /health is not probed: by choice (--no-health: then the process must be
    seen alive) or not at all (replay: no /health result ever arrived).
    """
    if s.process_alive is False and s.launched:
        return False
    if s.health_ready:
        return answerer(s)[0] == OURS
    if health_probed(s):
        return False
    return s.health_probed is None or s.process_alive is True


def health_probed(s: Readiness) -> bool:
    """/health is probed: the caller said so, or (not told) an HTTP probe result arrived."""
    if s.health_probed is not None:
        return s.health_probed
    return bool(s.health_checked_at)
