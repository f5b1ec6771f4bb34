"""Freshness is a fact: whether a server's facts come from a look that still reaches it (DESIGN.md, third round).

A verdict rests only on what the last look saw. The state keeps when the host was last heard from while it cannot
be heard now (`LinkFacts.lost_at`) and why (`lost_by`): "link", the connection failed (a probe's look, an auth
error), the first connection never came, or a lost one has been reconnecting for longer than FRESH_S (longer
than a normal reconnect, so a blip is not an outage); "watch", the link says connected but the process watch,
which reports every 2 s (5 s while it looks for the server), and the GPU probe have said nothing for WATCH_QUIET_S
(a frozen sshd or host: keepalive takes longer to notice). The log tail has no cadence of its own (`tail -F` says something only
when the file grows), so a quiet log is the stall rule's, not this one's.

While lost, nothing is ready (tui.core.verdict.decide ranks it above ready); a startup keeps its own verdict
(a wait rides a reconnect out). Facts that come back clear it: a connection, a process report. Pure.
"""

from __future__ import annotations

from tui.core.events import ConnectionState
from tui.core.state import Readiness

FRESH_S = 5.0  # a link reconnecting longer than this is lost (SshHost's first retries come within ~1 s)
WATCH_QUIET_S = 15.0  # three of the process watch's slowest reports (5 s while it looks for the server)


def on_connection(was: Readiness, s: Readiness, ev: ConnectionState, now: float) -> Readiness:
    """The freshness a link event says: `was` before it, `s` with its connection folded. Connected clears a lost
    link; failed, or a first connection that did not come (connecting → reconnecting), is lost at once."""
    if ev.state == "connected":
        return s.evolve(lost_at=None, lost_by="") if s.lost_by == "link" else s
    if s.lost_by == "link" or ev.state == "connecting":
        return s  # lost already: it was last heard from then
    if ev.state == "failed" or was.connection == "connecting":
        return s.evolve(lost_at=_last_heard(was, now), lost_by="link")
    return s  # reconnecting after a loss: lost once it lasts FRESH_S (on_tick)


def on_process_report(s: Readiness) -> Readiness:
    """A process report: the watch speaks again."""
    return s.evolve(lost_at=None, lost_by="") if s.lost_by == "watch" else s


def on_tick(s: Readiness, now: float) -> Readiness:
    """The clock's judgement: a reconnect past FRESH_S; a host whose process watch (and GPU probe) said nothing
    for WATCH_QUIET_S while the link says connected, or that speaks again."""
    if s.lost_by == "link":
        return s
    since = s.connection_since
    # "connecting" too: a host behind a mux agent says it again at each retry of a lost link (sources/muxhost.py),
    # and a first connection that has not come within FRESH_S is no fresher
    if s.connection in ("reconnecting", "connecting") and since is not None and now - since >= FRESH_S:
        heard_last = since if s.lost_at is None else min(since, s.lost_at)  # quiet before the link dropped
        return s.evolve(lost_at=heard_last, lost_by="link")
    heard = last_heard(s)
    quiet = s.connection == "connected" and heard is not None and now - heard > WATCH_QUIET_S
    if quiet and s.lost_by == "":
        return s.evolve(lost_at=heard, lost_by="watch")
    if not quiet and s.lost_by == "watch":
        return s.evolve(lost_at=None, lost_by="")
    return s


def last_heard(s: Readiness) -> float | None:
    """The clock time the host last spoke on its own cadence: the process watch's report, or the GPU probe's
    (a scan stuck on one hung process is not a host that does not answer); None where no process watch runs."""
    if s.process_checked_at is None:
        return None
    return max(t for t in (s.process_checked_at, s.gpus_at) if t is not None)


def _last_heard(was: Readiness, now: float) -> float:
    """When the host was last heard from: the last event folded while connected (a probe's last call), the start
    of a reconnect, or now when it never answered."""
    if was.connection == "connected" and was.updated_at > 0:
        return min(now, was.updated_at)
    if was.connection in ("reconnecting", "connecting") and was.connection_since is not None:
        return was.connection_since  # the outage's start (a mux agent's retries say both words: one outage)
    if was.lost_at is not None:
        return was.lost_at
    return now


def is_lost(s: Readiness) -> bool:
    return s.lost_at is not None


def last_seen_s(s: Readiness, now: float) -> float | None:
    """Seconds since the host was last heard from, while it cannot be (None while its facts are fresh)."""
    return None if s.lost_at is None else max(0.0, now - s.lost_at)


def lost_words(s: Readiness, now: float) -> str:
    """The cannot-connect line: "cannot connect: connection lost: …; last seen ready 1m ago" (the suffix once
    the server was seen up), or, for a quiet process watch, what went quiet."""
    from tui.core.fmt import duration
    from tui.core.names import phase_words
    from tui.core.state import Phase

    heard = last_heard(s)
    if s.lost_by == "watch" and s.connection != "failed":
        quiet = f" for {duration(now - heard)}" if heard is not None else ""
        text = f"cannot connect: the host does not answer (its process watch and GPU probe have said nothing{quiet})"
    else:
        text = f"cannot connect: {s.connection_detail}" if s.connection_detail else "cannot connect"
    ago = last_seen_s(s, now)
    if ago is None or s.phase not in (Phase.READY, Phase.SERVING):
        return text
    return f"{text}; last seen {phase_words(s.phase)} {duration(ago)} ago"
