"""tui/sources/bounded.py: `within` keeps every cancel (asyncio.wait_for on Python 3.10/3.11 drops one that comes as
the awaited thing ends), and `wait_at_most` cut off at its bound leaves nothing for asyncio to print."""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tui.sources.bounded import in_a_task_within, wait_at_most, within


async def test_a_gather_cut_off_at_its_bound_is_never_reported_unretrieved() -> None:
    """m43: `fleet --once` printed "_GatheringFuture exception was never retrieved" and a traceback on stderr
    when its close cut off a gather whose task was still ending (it ends after the cut, with CancelledError)."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _, context: reported.append(context))
    ended = asyncio.Event()

    async def slow_to_end() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0.05)  # its own close, past the bound
            ended.set()

    task = asyncio.ensure_future(slow_to_end())
    await asyncio.sleep(0)
    gathered = asyncio.gather(task, return_exceptions=True)
    await wait_at_most(gathered, 0.01)
    assert not gathered.done()  # cut off: still ending
    await asyncio.wait_for(ended.wait(), 5)  # the cut cancelled it: its close ends now
    await asyncio.sleep(0.01)
    assert gathered.done()  # its outcome not taken here: that is the point
    del gathered
    gc.collect()
    await asyncio.sleep(0)
    assert reported == []


Within = Callable[[Awaitable[Any], float], Awaitable[Any]]
# `within` as this Python runs it (asyncio.timeout from 3.11), and 3.10's way (a task of its own), on every Python
WAYS = pytest.mark.parametrize("bound", [within, in_a_task_within], ids=["within", "in-a-task (3.10)"])


@WAYS
async def test_a_cancel_that_comes_as_the_awaited_thing_ends_is_kept(bound: Within) -> None:
    """m43, m46: a job's squeue poller was cancelled in the loop iteration its squeue ended; asyncio.wait_for (3.11)
    returned the answer and dropped the cancel, the poller polled on, and the close awaiting it (and the `wait`
    closing it, past its own --timeout) never ended. The same race, made in one iteration on purpose."""
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    polls: list[str] = []

    async def poller() -> None:
        while True:
            polls.append(await bound(answer, 30))
            await asyncio.sleep(0.01)  # the next look (a poller cancelled here never ends: the cancel was its one)

    task = asyncio.ensure_future(poller())
    await asyncio.sleep(0)  # the poller awaits its answer
    answer.set_result("RUNNING")  # the answer comes ...
    task.cancel()  # ... and the close's cancel in the same iteration
    done, _ = await asyncio.wait({task}, timeout=5)
    assert done == {task} and task.cancelled() and polls == []


async def _slow_to_close(ended: list[str]) -> None:
    """Waits a minute; cancelled, it takes a moment to close, then says so in `ended`."""
    try:
        await asyncio.sleep(60)
    finally:
        await asyncio.sleep(0.02)  # its own close: over before `within` returns
        ended.append("closed")


@WAYS
async def test_past_its_bound_the_awaited_thing_is_cancelled_and_has_ended(bound: Within) -> None:
    ended: list[str] = []
    with pytest.raises(asyncio.TimeoutError):
        await bound(_slow_to_close(ended), 0.01)
    assert ended == ["closed"]


@WAYS
async def test_a_cancelled_caller_gets_the_cancel_once_the_awaited_thing_has_ended(bound: Within) -> None:
    ended: list[str] = []
    task = asyncio.ensure_future(bound(_slow_to_close(ended), 30))
    await asyncio.sleep(0.01)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5)
    assert done == {task} and task.cancelled() and ended == ["closed"]


@WAYS
async def test_in_time_it_gives_the_result_or_the_error(bound: Within) -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    async def refuse() -> int:
        await asyncio.sleep(0)
        raise ConnectionRefusedError("refused")

    assert await bound(answer(), 5) == 42
    assert await within(answer(), None) == 42  # no bound: awaited as it is
    with pytest.raises(ConnectionRefusedError, match="refused"):
        await bound(refuse(), 5)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="3.10 has no asyncio.timeout: within drops such a result there")
async def test_a_permit_granted_as_the_cancel_comes_goes_back() -> None:
    """ssh.py's channel slot is a semaphore acquired within a bound: a caller cancelled in the very iteration its
    permit was granted must not keep it (that SSH channel would be gone for good)."""
    slots = asyncio.Semaphore(1)
    await slots.acquire()  # every channel busy
    task = asyncio.ensure_future(within(slots.acquire(), 30))
    await asyncio.sleep(0)  # the caller waits for a slot
    slots.release()  # a slot is granted to it ...
    task.cancel()  # ... and the cancel comes in the same iteration
    await asyncio.wait({task}, timeout=5)
    assert task.cancelled() and not slots.locked()
