"""`kill -USR1 PID` makes a running sglang-tui print where it waits, on its stderr: every thread's stack and every
asyncio task's, then it goes on. For a hang that cannot be reproduced at will (a `wait` past its own --timeout,
seen once in a few hundred runs): the suite sends it to a command that outlives its bound before killing it
(tests/helpers/processes.Cli), and a user can send it to attach the answer to a bug report."""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import FrameType

MAX_AWAITS = 40  # a chain longer than this is cut: enough to show where it waits


def dump_stacks_on_usr1() -> None:
    """Install the handler (the main thread only; where SIGUSR1 does not exist, nothing)."""
    usr1 = getattr(signal, "SIGUSR1", None)
    if usr1 is None:
        return
    try:
        signal.signal(usr1, _dump)
    except ValueError:  # not the main thread
        pass


def _dump(_signum: int, _frame: FrameType | None) -> None:
    err = sys.__stderr__
    if err is None:
        return
    import faulthandler  # here, not at the top: every command (a lean probe too) installs the handler

    print("sglang-tui: stacks (SIGUSR1)", file=err, flush=True)
    faulthandler.dump_traceback(file=err, all_threads=True)
    asyncio = sys.modules.get("asyncio")  # not imported here: `probe` runs with no event loop and loads none
    if asyncio is None:
        return
    try:
        loop = asyncio.get_running_loop()  # a Python handler runs in the main thread, inside the loop's run
    except RuntimeError:
        return
    for task in asyncio.all_tasks(loop):
        print(f"-- {task.get_name()}, awaiting (outermost first):", file=err)
        for where in _awaits(task.get_coro()):
            print(f"   {where}", file=err)
    err.flush()


def _awaits(coro: object) -> list[str]:
    """Where a suspended task waits, its whole chain of awaits (Task.print_stack shows only the outermost frame of
    a suspended coroutine): each coroutine's or async generator's file, line and function, then what it awaits."""
    import gc

    chain: list[str] = []
    while coro is not None and len(chain) < MAX_AWAITS:
        if type(coro).__name__ == "async_generator_asend":  # `async for`: the generator it steps, found by gc
            coro = next((g for g in gc.get_referents(coro) if type(g).__name__ == "async_generator"), None)
            continue
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            chain.append(repr(coro)[:200])  # a future, or a finished coroutine
            break
        chain.append(f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None) or getattr(coro, "gi_yieldfrom", None)
    return chain
