"""`sglang-tui fleet [TARGET …] [--inventory FILE.toml] [--json] [--once]`: one board for many servers.

The servers are watched by tui/commands/fleet_watch.py (one connection per SSH host). Three ways to show them:

- the board (tui/ui/fleet_app.py), on a terminal: one row per server, `/` filters, `s` sorts, Enter opens the
  server's full view;
- `--once`: `wait` per row: the table once every row's verdict is final (or --timeout passed: a row still
  starting is 7), and the exit code of DESIGN.md's one table: 0 when every server is ready, else the worst row's
  (tui.core.fleet.once_code, worst); a row that cannot be reached is 4 at once;
- `--json`: one JSON object per server state change (the `wait --json` object plus "name"), until SIGINT or
  SIGTERM; with `--once`, one object per server at that look, then the same exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from dataclasses import replace

from tui.commands.fleet_watch import Fleet, targets_of
from tui.commands.inventory import InventoryEntry, load
from tui.commands.options import FleetOptions
from tui.commands.targets import FleetTarget
from tui.core.exitcodes import EXIT_BAD_ARGS
from tui.core.exitcodes import EXIT_TIMEOUT as EXIT_NOT_YET
from tui.core.explain import nothing_found
from tui.core.fleet import first_state_said, once_code, worst
from tui.core.report import to_json
from tui.sources.bounded import within
from tui.sources.hostpool import HostPool


def run(opts: FleetOptions) -> int:
    try:
        inventory: list[InventoryEntry] = load(opts.inventory) if opts.inventory else []
        targets = targets_of(opts, inventory)
    except ValueError as err:
        return _bad(str(err))
    opts = replace(opts, servers=tuple((e.name, e.server) for e in inventory))  # each server's own SSH, launch
    if not targets:
        return _bad("give TARGETs (HOST, HOST:PORT[:LOG]) or --inventory FILE.toml")
    if opts.once or opts.json:
        return asyncio.run(_headless(opts, targets))
    from tui.commands.fleet_board import run_board

    try:
        return run_board(opts, targets)
    except ValueError as err:
        return _bad(str(err))


def _bad(line: str) -> int:
    print(f"sglang-tui fleet: {line}", file=sys.stderr)
    return EXIT_BAD_ARGS


def object_of(fleet: Fleet, index: int) -> dict[str, object]:
    """The row's `wait --json` object, with its "name" first."""
    entry = fleet.rows[index].entry  # a Slurm job's: the deployment's combined state, its "members" in the object
    return {"name": entry.name, **to_json(entry.state)}


async def _headless(opts: FleetOptions, targets: list[tuple[FleetTarget, str, str]]) -> int:
    fleet = Fleet(opts, HostPool(remote_python=opts.remote_python))
    deadline = asyncio.get_running_loop().time() + opts.timeout  # `--once`: its --timeout counts from here
    try:
        try:
            await fleet.open(targets, budget=opts.timeout if opts.once else None)
        except ValueError as err:
            return _bad(str(err))
        fleet.start()
        if opts.once:
            return await _once(fleet, deadline)
        return await _stream(fleet)
    finally:
        await fleet.close()


ONCE_WAKE_S = 1.0  # `--once` looks again this often without a change (a grace or a failure's settling ends)


async def _once(fleet: Fleet, deadline: float) -> int:
    """`wait` per row: each row's code once its verdict is final (tui.core.fleet.once_code; 7 for a row still
    starting at --timeout), the table at those states, and the worst code. A row that cannot be reached is decided
    at once and holds no other."""
    loop = asyncio.get_running_loop()
    opts = fleet.opts
    missing: dict[int, float] = {}  # row: clock time since which nothing of it is found

    def codes() -> list[int | None]:
        now = fleet.clock()
        out: list[int | None] = []
        for i, entry in enumerate(fleet.entries):
            if entry.kind != "nothing" and nothing_found(entry.state):
                missing.setdefault(i, now)
            else:
                missing.pop(i, None)
            out.append(once_code(entry, now, missing.get(i)))
        return out

    found = codes()
    while any(c is None for c in found):
        left = deadline - loop.time()
        if left <= 0:
            break
        with contextlib.suppress(asyncio.TimeoutError):
            await within(fleet.changes.get(), min(left, ONCE_WAKE_S))
        found = codes()
    entries = fleet.entries
    if opts.json:
        for i in sorted(range(len(entries)), key=lambda i: entries[i].order):
            _print(json.dumps(object_of(fleet, i), ensure_ascii=False))
    else:
        from tui.ui.fleet_rows import table_text

        _print(table_text(sorted(entries, key=lambda e: e.order), fleet.clock()))
    final = [EXIT_NOT_YET if c is None else c for c in found]
    code = worst(final)
    held = next((e for e, c in zip(entries, final, strict=True) if c == code), None)
    if code and held is not None:  # the row that decides the code, said where `wait` says its verdict
        from tui.ui.fleet_rows import cells

        print(f"sglang-tui fleet: {held.name}: {cells(held, fleet.clock())['status']}", file=sys.stderr)
    return code


async def _stream(fleet: Fleet) -> int:
    """One line per row whose `wait --json` object changed, until SIGINT or SIGTERM (then 0)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    said: dict[int, str] = {}

    def say(index: int) -> None:
        if not first_state_said(fleet.rows[index].entry):
            return  # no look yet: its first object is the state its first look found, never a replayed startup
        text = json.dumps(object_of(fleet, index), ensure_ascii=False)
        if said.get(index) != text:
            said[index] = text
            _print(text)

    for i in range(len(fleet.rows)):
        say(i)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        while not stop.is_set():
            change = asyncio.ensure_future(fleet.changes.get())
            done, _ = await asyncio.wait({change, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if change in done:
                say(change.result())
                while not fleet.changes.empty():
                    say(fleet.changes.get_nowait())
            else:
                change.cancel()
    finally:
        stopped.cancel()
    return 0


def _print(line: str) -> None:
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
