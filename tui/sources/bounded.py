"""Waiting at most so long for a close, without losing a cancel.

On Python 3.11, `asyncio.wait_for` returns the awaited result when a cancel comes as the awaited thing finishes,
and the cancel is gone: a cancelled watch or tail that was closing a command went on to start another (a hang
seen in the suite under load). `asyncio.wait` leaves the cancel with the caller."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable


async def wait_at_most(awaitable: Awaitable[object], timeout: float) -> None:
    """Await `awaitable` for up to `timeout` s (then drop it); its error is raised, a cancel is never swallowed."""
    future = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({future}, timeout=timeout)
    except asyncio.CancelledError:
        future.cancel()
        raise
    if not done:
        future.cancel()
        future.add_done_callback(_retrieved)
        return
    future.result()


def _retrieved(future: asyncio.Future[object]) -> None:
    """Take the outcome of an awaitable that was cut off, once it ends: a cut-off `gather` ends later with its
    children's CancelledError as its exception, which nobody awaits, and asyncio would print it as a traceback
    ("_GatheringFuture exception was never retrieved") on the user's terminal."""
    if not future.cancelled():
        future.exception()
