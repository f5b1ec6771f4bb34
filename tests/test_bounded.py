"""wait_at_most (tui/sources/bounded.py): a close cut off at its bound leaves nothing for asyncio to print."""

from __future__ import annotations

import asyncio
import gc

from tui.sources.bounded import wait_at_most


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
