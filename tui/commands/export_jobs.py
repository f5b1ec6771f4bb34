"""`export`'s Slurm jobs (`slurm:JOBID`, `slurm:`, `srt:LOGDIR`, through a login node or not): each job is watched by
the fleet board's own machinery (tui/commands/fleet_watch.Fleet), so a job's metrics are exactly the board's row.
A queued job reads `queued` with Slurm's reason, then its nodes (or its srtctl workers) open in place; a job that
ends reads failed with Slurm's word. The row's combined state is exported under `server` (the target as written,
or `slurm:JOBID` for each job `slurm:` found), each member's under `member` beside it, as `--deployment` does.
A target that names no running job, or whose login node cannot be reached, is said in one line and exported as the
board shows it (not ready).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Protocol

from tui.commands.fleet_watch import Fleet
from tui.commands.options import ExportOptions, FleetOptions
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_OK
from tui.core.state import Readiness
from tui.core.wording import verdict_line
from tui.sources.hostpool import HostPool


class Rows(Protocol):
    """Where each row's states go (export's Board)."""

    def put(self, server: str, state: Readiness, member: str | None = None) -> None: ...

    def drop_members(self, server: str) -> None: ...


def fleet_options(opts: ExportOptions) -> FleetOptions:
    """The board's options for export's jobs: watch only, export's SSH, remote python, health and stall rule."""
    watch = opts.watch
    return FleetOptions(
        tuple(job.name for job in opts.jobs), opts.target.ssh, remote_python=watch.remote_python, read_only=True,
        health=watch.health, stall_after=watch.stall_after, history=opts.history,
    )  # fmt: skip


def publish(fleet: Fleet, index: int, rows: Rows) -> None:
    """Row `index` as the board has it: the whole under its name, each member (a job's node or worker) under it."""
    watched = fleet.rows[index]
    name = watched.entry.name
    rows.drop_members(name)  # a queued job's row has none; once it runs, its members come with it
    if watched.job is not None:
        for member in watched.job.dep.members:
            rows.put(name, member.state, member.name)
    rows.put(name, watched.entry.state)


async def watch_jobs(opts: ExportOptions, rows: Rows, stop: asyncio.Event) -> int:
    """Open the jobs as the board opens its rows, publish each row as it moves, until `stop`; a target the board
    refuses (a bad target) is one line and exit 2 (and sets `stop`, so the plain targets' watch ends too)."""
    fleet = Fleet(fleet_options(opts), HostPool(remote_python=opts.watch.remote_python))
    try:
        opening = asyncio.ensure_future(fleet.open([(job, job.name, "") for job in opts.jobs]))
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({opening, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if not opening.done():
            opening.cancel()
            await asyncio.gather(opening, return_exceptions=True)
            return EXIT_OK
        try:
            opening.result()
        except ValueError as err:
            print(f"sglang-tui export: {err}", file=sys.stderr)
            stop.set()
            return EXIT_BAD_ARGS
        for index, watched in enumerate(fleet.rows):
            if (
                watched.job is None and watched.queued is None and watched.pending is None
            ):  # nothing to follow: said once
                said = watched.entry.note or verdict_line(watched.entry.state)  # none running, or not reached
                print(f"sglang-tui export: {watched.entry.name}: {said}", file=sys.stderr)
            publish(fleet, index, rows)
        fleet.start()
        follow = asyncio.ensure_future(_follow(fleet, rows))
        try:
            await stop.wait()
        finally:
            follow.cancel()
            await asyncio.gather(follow, return_exceptions=True)
        return EXIT_OK
    finally:
        await fleet.close()


async def _follow(fleet: Fleet, rows: Rows) -> None:
    while True:
        publish(fleet, await fleet.changes.get(), rows)
