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
        return
    future.result()
