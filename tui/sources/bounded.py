"""Waiting at most so long, without losing a cancel.

On Python 3.10 and 3.11, `asyncio.wait_for` returns the awaited result when a cancel comes in the same loop
iteration as the awaited thing finishes, and the cancel is gone (fixed in 3.12, where it is built on
`asyncio.timeout`). A task cancelled while one of its commands ended then went on as if never cancelled:
a cancelled watch or tail started another command, and a job's squeue poller went on polling, so the close
that awaited it, and the `wait` that closed it, never ended (`wait slurm:` past its own --timeout, seen in the
suite under load). So `asyncio.wait_for` is banned in tui/ (ruff TID251, pyproject.toml): `within` takes its place.
On 3.11 and later it is `asyncio.timeout`, as 3.12's `wait_for` is: the awaited thing runs in the caller's task, so
a cancel reaches it and nothing is lost, not even a semaphore's permit granted in the cancel's iteration. On 3.10,
which has no `asyncio.timeout`, it awaits a task of its own with `asyncio.wait`, which leaves the cancel with the
caller; a result that comes in the cancel's very iteration is dropped there."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], timeout: float | None) -> T:
    """`asyncio.wait_for` that never drops a cancel: the result of `awaitable` within `timeout` s (None: no limit),
    else `asyncio.TimeoutError`; the awaited thing is cancelled and has ended, whichever way this returns."""
    if timeout is None:
        return await awaitable  # in this task, as wait_for does: no bound, so no race with one
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(timeout):
            return await awaitable
    return await in_a_task_within(awaitable, timeout)


async def in_a_task_within(awaitable: Awaitable[T], timeout: float) -> T:
    """`within` on Python 3.10: the awaited thing in a task of its own, awaited with `asyncio.wait` (which keeps a
    cancel: it is raised here once that task has ended; a result that came in the same iteration is dropped)."""
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
