"""The one wait loop, for a server (tui/sources/session.Session) and for a deployment
(tui/sources/deployment_session.DeploymentSession) alike: fold the watched states until the verdict
(tui/core/verdict.decide) is final, or until the timeout.

A single server's verdict rests on its liveness (tui/core/liveness.py): a ready state is held for the one
/server_info read, then reported only once a liveness check made after everything it reports confirms it
(`wait` makes that check itself: facts folded in one batch share one clock time, so a report folded beside a
later fact cannot show it came after); a failure is held a moment while the process watch or the log may still
say otherwise (a retry holding the log open, the log's root cause). A deployment's verdict stands as folded
(`settles` False). Nothing is reported after the last look.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from tui.core.explain import nothing_found
from tui.core.liveness import failure_settling, liveness_at, ready_confirmed
from tui.core.serverinfo import GRACE_S, awaits_server_info
from tui.core.state import Readiness
from tui.core.verdict import Verdict, decide, ended
from tui.sources.bounded import within
from tui.sources.host import HostError

LAST_LOOK_S = 10.0  # the liveness check made after a timeout, at most (a scan, or one /health)


class Watched(Protocol):
    """What the loop waits on: its states after each batch, the state so far, a liveness check, its clock."""

    state: Readiness
    settles: bool
    """Whether a verdict waits for its last look (ready) and a moment (failed): a single server's rules."""

    def clock(self) -> float: ...

    def states(self) -> AsyncIterator[tuple[Readiness, float]]: ...

    async def check_alive(self) -> Readiness: ...

    async def close(self) -> None: ...


def nothing_found_verdict(state: Readiness, since: float | None, now: float, grace: float | None) -> Verdict | None:
    """Nothing found once nothing of the server was found for `grace` seconds (the log missing, or no log and
    nothing listening): a wrong path or port is said at once and ends the wait, instead of at --timeout."""
    missing = nothing_found(state)
    if grace is None or since is None or not missing or now - since < grace:
        return None
    return ended("nothing_found", state, detail=missing, after_s=now - since)


Report = Callable[[Readiness, float], None]
"""Told each state that is reported, with the seconds since the wait began."""


async def wait_for(
    watched: Watched,
    report: Report,
    *,
    timeout: float | None,
    say: Callable[[str], None],
    budget: float | None = None,
    grace: float | None = None,
) -> tuple[Verdict, Readiness]:
    """Fold the watched states until a final verdict; after `timeout` seconds, timed out (with the state's own
    verdict inside it, and `budget`, the whole --timeout the user gave, as the time it ran: `timeout` is what was
    left of it after connecting). `grace`: nothing of the server found (the log missing, or no log and nothing
    listening: tui.core.explain.nothing_found) for that long is "nothing found", said at once instead of at the
    timeout. The watched thing is closed on the way out."""
    start = watched.clock()
    unconfirmed_at: float | None = None  # a last look that did not confirm ready: wait for new evidence

    async def confirmed(state: Readiness) -> Readiness:
        """The state after the last look that a ready verdict needs: one check, folded alone."""
        nonlocal unconfirmed_at
        evidence = liveness_at(state)
        if unconfirmed_at is not None and (evidence is None or evidence <= unconfirmed_at):
            return state  # the last look failed to confirm; only new evidence (a report, a 200) is worth another
        try:
            state = await watched.check_alive()
        except (HostError, TimeoutError, OSError) as err:
            say(f"could not check the server is still alive: {err}")
        if not ready_confirmed(state):
            unconfirmed_at = state.updated_at
        return state

    async def fold() -> tuple[Verdict, Readiness] | None:
        ready_at: float | None = None
        missing_since: float | None = None  # clock time nothing of the server is found since
        async for state, now in watched.states():
            verdict = decide(state)
            if watched.settles and verdict.kind in ("ready", "serving"):
                ready_at = now if ready_at is None else ready_at
                if awaits_server_info(state) and now - ready_at < GRACE_S:
                    continue  # held, unreported: the one /server_info read (version, startup_time) for the history
                state = await confirmed(state)
                verdict = decide(state)
                if verdict.kind in ("ready", "serving") and not ready_confirmed(state):
                    continue  # not confirmed: unreported until new evidence says it lives
            elif watched.settles and verdict.kind in ("failed", "stopped") and failure_settling(state, now):
                continue  # held, unreported: the process watch's first report, or the log's cause, comes first
            report(state, now - start)
            if verdict.final:
                return verdict, state
            ready_at = None
            missing_since = (now if missing_since is None else missing_since) if nothing_found(state) else None
            gone = nothing_found_verdict(state, missing_since, now, grace)
            if gone is not None:
                return gone, state
        return None

    try:  # within, not asyncio.timeout: the project runs on Python 3.10
        found = await within(fold(), timeout)
        if found is not None:
            return found
    except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
        held = decide(watched.state)
        if watched.settles and held.kind in ("failed", "stopped"):  # timed out while a failure settled: it stands
            report(watched.state, watched.clock() - start)
            return held, watched.state
        if watched.settles and held.kind in ("ready", "serving"):  # timed out while held: ready once confirmed
            try:
                state = await within(confirmed(watched.state), LAST_LOOK_S)
            except asyncio.TimeoutError:
                state = watched.state
            final = decide(state)
            if final.final and (final.kind not in ("ready", "serving") or ready_confirmed(state)):
                report(state, watched.clock() - start)
                return final, state
    finally:
        await watched.close()
    return ended("timed_out", watched.state, after_s=budget if budget is not None else timeout), watched.state
