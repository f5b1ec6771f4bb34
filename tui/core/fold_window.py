"""A window of the log that starts mid-run: which line placed the phase when no launch line is in view.

Decided once per launch, in one place (the reducer calls it after every event): the first time a log event moves
the phase out of `starting` while this launch's `server_args=` line is not in view, that line is the window's
start. A rank's line of no known kind (kind "rank") is replaced by the kind the same line turns out to carry.
"""

from __future__ import annotations

from tui.core.events import BarProgress, BatchStats, Event, Milestone, RankSeen
from tui.core.state import MidRun, Phase, Readiness


def launch_in_view(s: Readiness) -> bool:
    """This launch's `server_args=` line is in the log read (the parser starts a launch there)."""
    return s.launch_line


def note_mid_run(before: Readiness, after: Readiness, event: Event) -> Readiness:
    """`after` with the mid-run fact, when `event` placed the first phase of a window with no launch in view."""
    seen = after.mid_run
    if seen is not None:
        if seen.kind == "rank" and isinstance(event, Milestone) and _same_line(seen, event):
            return _relabel(after, seen, event)
        return after
    if before.phase is not Phase.STARTING or after.phase in (Phase.STARTING, Phase.FAILED) or launch_in_view(after):
        return after
    if not isinstance(event, (Milestone, BarProgress, BatchStats, RankSeen)):
        return after
    return after.evolve(mid_run=_mid_run(event, after.phase))


def _same_line(seen: MidRun, event: Milestone) -> bool:
    return event.rank == seen.rank and event.at == seen.at


def _relabel(s: Readiness, seen: MidRun, event: Milestone) -> Readiness:
    """The rank's line was of this kind: the fact names it, and the init its rank alone placed was never a phase of
    its own when the same line proves a later one (its span goes from the timeline)."""
    timeline = s.timeline
    if s.phase is not seen.phase and s.phase is not Phase.FAILED and len(timeline) >= 2:
        before = timeline[-2]
        if before.phase is seen.phase and before.start == seen.at and before.model == "main":
            timeline = timeline[:-2] + timeline[-1:]
    phase = s.phase if s.phase is not Phase.FAILED else seen.phase
    return s.evolve(mid_run=_mid_run(event, phase), timeline=timeline)


def _mid_run(event: Milestone | BarProgress | BatchStats | RankSeen, phase: Phase) -> MidRun:
    if isinstance(event, Milestone):
        return MidRun(event.kind, phase, event.rank, event.line, event.at)
    if isinstance(event, BarProgress):
        return MidRun(event.bar, phase, event.rank, event.label, event.at)
    if isinstance(event, BatchStats):
        return MidRun("batch", phase, event.rank, event.stage, event.at)
    return MidRun("rank", phase, event.rank, "", event.at)
