"""tui/sources/bounded.py: `within` keeps every cancel (asyncio.wait_for on Python 3.10/3.11 drops one that comes as
the awaited thing ends), and `wait_at_most` cut off at its bound leaves nothing for asyncio to print."""

from __future__ import annotations

import asyncio
import gc

import pytest

from tui.sources.bounded import wait_at_most, within


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


async def test_a_cancel_that_comes_as_the_awaited_thing_ends_is_kept() -> None:
    """m43, m46: a job's squeue poller was cancelled in the loop iteration its squeue ended; asyncio.wait_for (3.11)
    returned the answer and dropped the cancel, the poller polled on, and the close awaiting it (and the `wait`
    closing it, past its own --timeout) never ended. The same race, made in one iteration on purpose."""
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    polls: list[str] = []

    async def poller() -> None:
        while True:
            polls.append(await within(answer, 30))
            await asyncio.sleep(0.01)  # the next look (a poller cancelled here never ends: the cancel was its one)

    task = asyncio.ensure_future(poller())
    await asyncio.sleep(0)  # the poller awaits its answer
    answer.set_result("RUNNING")  # the answer comes ...
    task.cancel()  # ... and the close's cancel in the same iteration
    done, _ = await asyncio.wait({task}, timeout=5)
    assert done == {task} and task.cancelled() and polls == []


async def test_past_its_bound_the_awaited_thing_is_cancelled_and_has_ended() -> None:
    ended: list[str] = []

    async def slow() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0.02)  # its own close: over before within says it timed out
            ended.append("closed")

    with pytest.raises(asyncio.TimeoutError):
        await within(slow(), 0.01)
    assert ended == ["closed"]


async def test_a_cancelled_caller_gets_the_cancel_once_the_awaited_thing_has_ended() -> None:
    ended: list[str] = []

    async def slow() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0.02)
            ended.append("closed")

    task = asyncio.ensure_future(within(slow(), 30))
    await asyncio.sleep(0.01)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5)
    assert done == {task} and task.cancelled() and ended == ["closed"]


async def test_in_time_it_gives_the_result_or_the_error() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    async def refuse() -> int:
        await asyncio.sleep(0)
        raise ConnectionRefusedError("refused")

    assert await within(answer(), 5) == 42
    assert await within(answer(), None) == 42
    with pytest.raises(ConnectionRefusedError, match="refused"):
        await within(refuse(), 5)
