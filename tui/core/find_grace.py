"""The grace in which a launch's processes may not be found yet: until it is over, "not found" is unknown, not
dead (readiness), and silence is not a stall either (tui.core.stall): a dead process is failed, never stalled."""

from __future__ import annotations

from tui.core.freshness import WATCH_QUIET_S
from tui.core.state import Readiness

FIND_GRACE_S = 15.0  # a new launch's processes may be found late (the host is re-scanned every few seconds)


def not_found_yet(s: Readiness, now: float) -> bool:
    """A launch begun moments ago whose processes no poll has seen yet: the poll may not have found them. Moments
    since we first saw it: a launch the log says began long before the attach gets the same grace."""
    if s.process_alive is True or not s.timeline:
        return False
    if s.error is not None and s.error.stopped_by == "sglang-tui":
        return False  # our own stop ended it, confirmed: gone, not "not found yet" (K then opened a kill dialog)
    return _in_grace(s, now)


def finding_the_server(s: Readiness, now: float) -> bool:
    """A process watch that can see has not said the server lives or died yet (unknown: before its first report,
    or not found within the grace), and no report of it has come since the grace ended: whether the server is
    stalled or failed is not known yet. The hold ends on that report, a fact, not after a time of its own: a host
    under load reports late, and a stall said before the report that says "gone" was a verdict no look had made.
    A watch that says nothing at all is freshness's to judge (lost after WATCH_QUIET_S), so the hold ends then."""
    if s.process_watched is not True or not s.process_visible or s.process_alive is not None or not s.timeline:
        return False
    if _in_grace(s, now):
        return True
    reported_since = s.process_checked_at is not None and not _in_grace(s, s.process_checked_at)
    return not reported_since and now - _seen(s) <= FIND_GRACE_S + WATCH_QUIET_S


def _in_grace(s: Readiness, at: float) -> bool:
    """`at` is within the find's grace: a report folded then says "not found yet", not "gone" (one boundary for
    both, so a report is either in the grace or after it)."""
    return at - _seen(s) <= FIND_GRACE_S


def _seen(s: Readiness) -> float:
    return max(s.timeline[0].started_at, s.first_seen_at or s.timeline[0].started_at)
