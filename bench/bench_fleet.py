"""Cost on the laptop of the fleet board (a script, not a test): CPU per minute and memory of `sglang-tui fleet`
(the Fleet and the board, headless through `run_test`) with N simulated servers at ready, all on one loopback sshd
(one SSH connection, one mux agent), and the delay from a log line written on the host to the board's cell.

The delay: a few extra rows watch logs this script writes; each gets an SGLang startup up to just before
"Load weight begin", then, once its row settled, that one line; the time until that row's PHASE cell says
"loading weights" is the delay (the Monitor's tail over SSH, the fold, the board's FLUSH_S batching, the redraw).
`python bench/bench_fleet.py [--servers 24] [--seconds 30]`
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from bench_common import PY, async_wait_until, loopback_sshd, md_table, ms, rss_mib, section, self_cpu_s, summary_ms

from tests.helpers.sim import SimServer, start_sim
from tests.helpers.sshd import Sshd, free_port
from tui.commands.fleet_board import board_app
from tui.commands.fleet_watch import Fleet
from tui.commands.options import FleetOptions
from tui.commands.targets import FleetTarget, ServerTarget
from tui.core.config import Ssh
from tui.core.state import Phase
from tui.sources.hostpool import HostPool
from tui.ui.fleet_app import FLUSH_S, FleetApp

WARMUP_S = 3.0
MARK = b"Load weight begin"


def _options(sshd: Sshd) -> FleetOptions:
    """`fleet` as the command line gives it: read-only, no history, every target over the loopback sshd."""
    ssh = Ssh(port=sshd.port, user=sshd.user, identity=str(sshd.identity), known_hosts=str(sshd.known_hosts))
    return FleetOptions(ssh=ssh, remote_python=PY, read_only=True, history=None)


def _phase_cell(app: FleetApp, name: str) -> str:
    table = app.table
    for i in range(table.row_count):
        row = table.get_row_at(i)
        if str(row[0]) == name:
            return str(row[2])
    return ""


async def measure(sshd: Sshd, sims: list[SimServer], probes: list[Path], seconds: float, startup: bytes) -> dict[str, object]:  # fmt: skip
    head = startup.partition(MARK)[0]
    before = head[: head.rfind(b"\n") + 1]  # every whole line before the marker's
    line = startup[len(before) : startup.index(b"\n", len(head)) + 1]
    targets: list[tuple[FleetTarget, str, str]] = [
        (ServerTarget(f"s{i}", sshd.host, s.port, str(s.log)), f"s{i}", "") for i, s in enumerate(sims)
    ]
    targets += [
        (ServerTarget(f"probe{i}", sshd.host, free_port(), str(p)), f"probe{i}", "") for i, p in enumerate(probes)
    ]
    opts = _options(sshd)
    fleet = Fleet(opts, HostPool(remote_python=PY))
    await fleet.open(targets)
    fleet.start()
    app = board_app(opts, fleet)
    out: dict[str, object] = {}
    try:
        async with app.run_test(size=(200, 50)) as pilot:
            up = await async_wait_until(
                lambda: all(e.state.phase in (Phase.READY, Phase.SERVING) for e in fleet.entries[: len(sims)]), 120
            )
            if not up:
                raise RuntimeError("the servers did not turn ready on the board")
            await pilot.pause(WARMUP_S)
            cpu, redraws = self_cpu_s(), app.redraws
            await asyncio.sleep(seconds)
            out["cpu"] = self_cpu_s() - cpu
            out["redraws"] = app.redraws - redraws
            out["rss"] = rss_mib()
            delays = []
            for i, path in enumerate(probes):
                with path.open("ab") as f:
                    f.write(before)
                await pilot.pause(1.0)  # its row settles on the lines before the marker
                with path.open("ab") as f:
                    written = time.monotonic()
                    f.write(line)
                if await async_wait_until(lambda i=i: _phase_cell(app, f"probe{i}") == "loading weights", 30, 0.002):
                    delays.append(time.monotonic() - written)
            out["delays"] = delays
            out["connections"] = fleet.pool.connections
    finally:
        await fleet.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", type=int, default=24)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--probes", type=int, default=5, help="rows for the log-line-to-board delay")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp, loopback_sshd() as sshd:
        root = Path(tmp)
        sims: list[SimServer] = []
        try:
            for i in range(args.servers):
                (root / f"s{i}").mkdir()
                sims.append(start_sim(root / f"s{i}", speed=200.0, shards=8, tp=2, speculative="none"))
            deadline = time.monotonic() + 180
            while not all(b"fired up" in s.log.read_bytes() for s in sims if s.log.exists()) or not all(
                s.log.exists() for s in sims
            ):
                if time.monotonic() > deadline:
                    sys.exit("the simulated servers did not reach ready")
                time.sleep(0.2)
            probes = [root / f"probe{i}.log" for i in range(args.probes)]
            found = asyncio.run(measure(sshd, sims, probes, args.seconds, sims[0].log.read_bytes()))
        finally:
            for sim in sims:
                sim.stop()
    cpu = float(found["cpu"])  # type: ignore[arg-type]
    delays = list(found["delays"])  # type: ignore[call-overload]
    p50, p90, _, worst = summary_ms(delays) if delays else ("—",) * 4
    rows = [(
        f"{args.servers} at ready (+{args.probes} quiet rows)", f"{cpu * 60.0 / args.seconds:.2f} s",
        f"{100 * cpu / args.seconds:.2f}%", f"{float(found['rss']):.0f} MiB",  # type: ignore[arg-type]
        f"{int(found['redraws']) * 60.0 / args.seconds:.0f}", str(found["connections"]),  # type: ignore[call-overload]
        f"{p50} / {p90} / {worst} (n={len(delays)})",
    )]  # fmt: skip
    table = md_table(
        ("servers", "CPU per minute", "of one core", "RSS", "cells redrawn per minute", "SSH connections",
         "log line to board p50 / p90 / max"), rows,
    )  # fmt: skip
    print(
        section(
            "Laptop cost of the fleet board",
            table,
            (
                "`fleet`'s watch and board in one process (the board headless through `run_test`, 200×50), every "
                "server a quiet simulator (tp 2) at ready behind one loopback sshd; goal: ≤ 1 s of CPU per minute "
                "with 24.",
                f"CPU and redraws over {args.seconds:g} s after a {WARMUP_S:g} s warm-up; RSS of the process at the "
                "end (the simulators are other processes).",
                f"Delay: from the write of one log line to its row's PHASE cell (the board draws changes "
                f"{ms(FLUSH_S)} after they come); the machine is shared, so figures vary.",
            ),
            "python bench/bench_fleet.py",
        )
    )


if __name__ == "__main__":
    main()
