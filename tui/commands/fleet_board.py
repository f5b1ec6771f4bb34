"""The fleet board's edge: the Fleet watched (tui/commands/fleet_watch.py), the board app (tui/ui/fleet_app.py) over
it, and each row's full view built on demand as `sglang-tui HOST` builds its app (the same keys: restart,
terminate, kill through the row's ServerControl, dump, bench), over the state the fleet folded."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

from textual.screen import Screen

from tui.commands.fleet_watch import Fleet, JobWatch, Watched
from tui.commands.options import FleetOptions
from tui.commands.targets import FleetTarget
from tui.core.events import Event
from tui.sources.hostpool import HostPool
from tui.ui.fleet_app import BoardSources, FleetApp


def server_screen(opts: FleetOptions, watched: Watched) -> Screen[Any] | None:
    """The row's full view (a ServerScreen), or None for a row with nothing to watch."""
    from tui.commands.watch import _bench_runner, _dumper
    from tui.ui.app import READY_CLOCK_TICKS, ServerScreen, UiSources

    if watched.job is not None:
        return job_screen(watched, watched.job)
    if watched.session is None or watched.host is None or watched.watch is None:
        return None
    watch = watched.watch
    log = watched.session.monitor.log_path
    port = watched.port or 30000
    sources = UiSources(
        batches=watched.view_batches,
        control=watched.control,
        host_label=watched.entry.name,
        port=watched.port,
        fold=watched.mirror_fold(),
        dump=_dumper(
            watched.host, watch, opts.server(watched.entry.name).remote_python or opts.remote_python, watched.entry.name
        ),  # fmt: skip
        bench=partial(_bench_runner, watched.host, port, log),
    )
    return ServerScreen(
        sources,
        read_only=opts.read_only or watched.control is None,
        initial=watched.entry.state,
        ready_clock_ticks=READY_CLOCK_TICKS,
        keymap=dict(opts.settings.keys),
    )


def job_screen(watched: Watched, job: JobWatch) -> Screen[Any]:
    """A Slurm job's full view (a DeploymentScreen, watch only, as `sglang-tui slurm:JOBID` opens it): the members
    pane and every node's log, over the deployment the fleet folded (its fold hands back the fleet's)."""
    from tui.ui.app import UiSources
    from tui.ui.deployment_app import DeploymentScreen

    async def no_batches() -> AsyncIterator[list[Event]]:  # the view reads the members' batches instead
        return
        yield

    specs = job.members.specs
    sources = UiSources(batches=no_batches, control=None, host_label=watched.entry.name, port=specs[0].port)
    return DeploymentScreen(sources, job.dep, watched.tee.batches, lambda dep, name, items, now: job.dep)


def controls(watched: Watched) -> frozenset[str]:
    """What the row's server can be made to do: terminate and kill with a control of its own (none under
    --read-only, none for a Slurm job), restart only with its launch command (the inventory's `launch`)."""
    control = watched.control
    if control is None or watched.job is not None:
        return frozenset()
    return frozenset(("terminate", "kill", "restart") if control.relaunch else ("terminate", "kill"))


def board_app(opts: FleetOptions, fleet: Fleet) -> FleetApp:
    async def changes() -> AsyncIterator[int]:
        while True:
            yield await fleet.changes.get()

    return FleetApp(
        BoardSources(
            entries=lambda: fleet.entries,
            changes=changes,
            open_view=lambda i: server_screen(opts, fleet.rows[i]),
            clock=fleet.clock,
            read_only=opts.read_only,
            controls=lambda i: controls(fleet.rows[i]),
        )
    )


def run_board(opts: FleetOptions, targets: list[tuple[FleetTarget, str, str]]) -> int:
    return asyncio.run(_board(opts, targets))


async def _board(opts: FleetOptions, targets: list[tuple[FleetTarget, str, str]]) -> int:
    from tui.commands.watch import run_app

    fleet = Fleet(opts, HostPool(remote_python=opts.remote_python))
    try:
        await fleet.open(targets)  # a target it cannot take: ValueError, said by the command in one line
        fleet.start()
        return await run_app(board_app(opts, fleet))
    finally:
        await fleet.close()
