"""Waiting at most so long, without losing a cancel.

On Python 3.10 and 3.11, `asyncio.wait_for` returns the awaited result when a cancel comes in the same loop
iteration as the awaited thing finishes, and the cancel is gone (fixed in 3.12, where it is built on
`asyncio.timeout`). A task cancelled while one of its commands ended then went on as if never cancelled:
a cancelled watch or tail started another command, and a job's squeue poller went on polling, so the close
that awaited it, and the `wait` that closed it, never ended (`wait slurm:` past its own --timeout, seen in the
suite under load). `asyncio.wait` leaves the cancel with the caller, so both helpers here are built on it, and
`asyncio.wait_for` is banned in tui/ (ruff TID251, pyproject.toml)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], timeout: float | None) -> T:
    """`asyncio.wait_for` that never drops a cancel: the result of `awaitable` within `timeout` s (None: no limit),
    else `asyncio.TimeoutError`; the awaited thing is cancelled and has ended, whichever way this returns."""
    if timeout is None:
        return await awaitable  # in this task, as wait_for does: no bound, so no race with one
    future = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({future}, timeout=timeout)
    except asyncio.CancelledError:
        future.cancel()
        future.add_done_callback(_retrieved)  # it may have ended with an error in the very iteration we were cancelled
        await asyncio.wait({future})
        raise
    if not done:
        future.cancel()
        await asyncio.wait({future})
        if future.cancelled():
            raise asyncio.TimeoutError
    return future.result()  # it ended in time, or it ended the cancel its own way (a result or an error)


async def wait_at_most(awaitable: Awaitable[object], timeout: float) -> None:
    """Await `awaitable` for up to `timeout` s (then drop it, not waiting for it to end: for a close that must not
    hold up what comes after it); its error is raised, a cancel is never swallowed."""
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


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Take the outcome of an awaitable that was cut off, once it ends: a cut-off `gather` ends later with its
    children's CancelledError as its exception, which nobody awaits, and asyncio would print it as a traceback
    ("_GatheringFuture exception was never retrieved") on the user's terminal."""
    if not future.cancelled():
        future.exception()
