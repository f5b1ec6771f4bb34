"""`async with deadline(S):` — asyncio.timeout on Python 3.11+, and the same on 3.10 (which has none): the block is
cancelled after S seconds and TimeoutError raised in its place."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

if sys.version_info >= (3, 11):
    deadline = asyncio.timeout
else:

    @asynccontextmanager
    async def deadline(seconds: float) -> AsyncIterator[None]:
        task = asyncio.current_task()
        assert task is not None, "deadline() is for a coroutine run by a task"
        fired = False

        def expire() -> None:
            nonlocal fired
            fired = True
            task.cancel()

        handle = asyncio.get_running_loop().call_later(seconds, expire)
        try:
            yield
        except asyncio.CancelledError:
            if fired:
                raise TimeoutError(f"not within {seconds} s") from None
            raise
        finally:
            handle.cancel()
