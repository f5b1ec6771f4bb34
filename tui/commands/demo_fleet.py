"""`sglang-tui demo --fleet`: several simulated servers start at once on this machine, and the fleet board opens on
them: different speeds, one that stalls, one that runs out of memory, and one slower than its history. `q` (or a
signal) stops them all.

Each server is an inventory row of `local` with its own launch command (so `r`, `T` and `K` work on the board as on
a real fleet), launched through its row's own ServerControl. The one slower than its history has the key of two
fast servers: it is launched once both are ready, so that their launches are in the demo fleet's history (its own
file, never the real one) and its weights, three times slower, show against them.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from tui.commands.demo_launch import PROJECT_ROOT, demo_stall_after, free_port, simulate_command
from tui.commands.fleet_watch import Fleet
from tui.commands.options import DemoOptions, FleetOptions, ServerOptions
from tui.commands.targets import FleetTarget, ServerTarget
from tui.core.events import ControlResult
from tui.core.fleet import UP
from tui.history.paths import default_path
from tui.sources.hostpool import HostPool

DEMO_FLEET_HISTORY = "demo-fleet-history.sqlite3"
SLOWER_THAN_USUAL = 3.0  # the late server's weights against its key's history


@dataclass(frozen=True)
class DemoServer:
    """One simulated server of the demo fleet."""

    name: str
    tp: int  # its launch key (servers of one tp share a key: their history is one)
    speed: float  # times the demo's --speed
    fault: str | None = None
    slow_weights: float | None = None
    after: tuple[str, ...] = ()  # launched once these are ready (and so in the history)


SERVERS: tuple[DemoServer, ...] = (
    DemoServer("chat-a", tp=8, speed=3.0),
    DemoServer("chat-b", tp=8, speed=3.0),
    DemoServer("chat-c", tp=8, speed=3.0, slow_weights=SLOWER_THAN_USUAL, after=("chat-a", "chat-b")),
    DemoServer("code-70b", tp=4, speed=1.0),
    DemoServer("big-405b", tp=2, speed=0.5),
    DemoServer("stuck-cap", tp=4, speed=1.0, fault="hang-capture"),
    DemoServer("oom-load", tp=1, speed=1.0, fault="oom-load"),
)


def demo_fleet_history() -> Path:
    """The demo fleet's own history: beside the real history, never that file itself."""
    return default_path().with_name(DEMO_FLEET_HISTORY)


def fleet_options(
    opts: DemoOptions, workdir: Path, servers: tuple[DemoServer, ...] = SERVERS
) -> tuple[FleetOptions, list[tuple[FleetTarget, str, str]]]:
    """The FleetOptions that watch the demo's servers (each with its launch command), and their rows' targets
    (`local`, each on a free port, its log and GPU state in its own directory under `workdir`)."""
    own: list[tuple[str, ServerOptions]] = []
    gpus: list[str] = []
    rows: list[tuple[FleetTarget, str, str]] = []
    for server in servers:
        where = workdir / server.name
        where.mkdir(parents=True, exist_ok=True)
        port = free_port()
        variation = ["--tp", str(server.tp), "--seed", str(len(own) + 1)]
        if server.slow_weights:
            variation += ["--slow", f"weights={server.slow_weights:g}"]
        launch = simulate_command(
            log=where / "server.log", port=port, gpu_dir=where / "gpus", speed=opts.speed * server.speed,
            fault=server.fault, variation=variation,
        )  # fmt: skip
        own.append((server.name, ServerOptions(launch=launch, cwd=PROJECT_ROOT)))
        gpus.append(str(where / "gpus"))
        rows.append((ServerTarget(server.name, "local", port, str(where / "server.log")), server.name, "demo"))
    fleet_opts = FleetOptions(
        remote_python=sys.executable,
        sim_gpus=",".join(gpus),
        read_only=opts.read_only,
        stall_after=demo_stall_after(opts.speed, opts.stall_after),
        history=demo_fleet_history(),
        settings=opts.settings,
        servers=tuple(own),
    )
    return fleet_opts, rows


async def launch(fleet: Fleet, index: int) -> ControlResult | None:
    """Start the row's server through its own control, and fold what the launch did into its row."""
    watched = fleet.rows[index]
    if watched.control is None or watched.session is None:
        return None
    result = await watched.control.launch()
    session = watched.session
    session.state = session.fold(session.state, [result], session.clock())
    watched.entry = replace(watched.entry, state=session.state)
    fleet.changes.put_nowait(index)
    return result


async def launch_when_ready(fleet: Fleet, index: int, names: tuple[str, ...]) -> None:
    """Launch the row once the rows `names` are up (their launches recorded: its past is theirs)."""
    while not all(e.state.phase in UP for e in fleet.entries if e.name in names):
        await asyncio.sleep(0.5)
    await launch(fleet, index)


async def stop_all(fleet: Fleet) -> list[ControlResult]:
    """Terminate every server the demo launched (TERM, then KILL after the grace), together."""
    controls = [w.control for w in fleet.rows if w.control is not None]
    results = await asyncio.gather(*(c.terminate() for c in controls), return_exceptions=True)
    return [r for r in results if isinstance(r, ControlResult)]


async def demo_fleet(opts: DemoOptions) -> int:
    from tui.commands.fleet_board import board_app
    from tui.commands.watch import run_app

    if opts.read_only:
        print("sglang-tui demo --fleet: --read-only would leave nothing to start the servers; drop one",
              file=sys.stderr)  # fmt: skip
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="sglang-tui-demo-fleet-"))
    fleet_opts, rows = fleet_options(opts, workdir)
    fleet = Fleet(fleet_opts, HostPool(remote_python=sys.executable))
    later: list[asyncio.Task[None]] = []
    code = 0
    try:
        await fleet.open(rows)
        fleet.start()
        for index, server in enumerate(SERVERS):
            if server.after:
                later.append(asyncio.ensure_future(launch_when_ready(fleet, index, server.after)))
            else:
                await launch(fleet, index)
        code = await run_app(board_app(fleet_opts, fleet))
    finally:
        for task in later:
            task.cancel()
        await asyncio.gather(*later, return_exceptions=True)
        # nothing of the demo may outlive it: q, and SIGHUP/SIGTERM/SIGINT (run_app turns them into a way out)
        stopped = await asyncio.shield(stop_all(fleet))
        await fleet.close()
        left = sum(len(r.survivors) for r in stopped)
        if not left:
            shutil.rmtree(workdir, ignore_errors=True)
        _say(f"sglang-tui demo --fleet: {len(stopped)} simulated servers stopped"
             + (f"; {left} process(es) left, their logs kept in {workdir}" if left else ""))  # fmt: skip
        _say(f"sglang-tui demo --fleet: its launches are kept in {demo_fleet_history()}")
    return code


def _say(line: str) -> None:
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass
