"""Attach (a script, not a test): time to the first full state when attaching to a 1 GB log whose last launch
is near the end, against reading the whole file.

The log: ~1 GB of an earlier launch's serving lines, then the simulator appends its own launch (server_args=,
64 shards, KV cache, CUDA graphs, ready) and serves /health. Over a loopback sshd: the Monitor (which starts the
tail at the last `server_args=` line, found by `grep -b` on the host), the headless TUI, the same pipeline made
to read the whole file, and `ssh host tail -c +1 LOG > /dev/null`. The file is deleted afterwards.
`python bench/bench_attach.py [--gib 1.0]`
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import PY, loopback_sshd, md_table, section, sim_ready, ssh_argv, ssh_host
from bench_laptop_cost import serving_lines

from tui.core.logparse import LogParser
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.sources.logtail import LogTail
from tui.sources.monitor import Monitor
from tui.sources.session import Session

TIMEOUT_S = 120.0
STARTUP = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "logs" / "v0.5.9-tp8-eagle3-ready.log"


def full(state: Readiness) -> bool:
    """The state a person attaching wants: the last launch ready, its 64 shards done, /health 200, GPUs seen."""
    return (state.phase in (Phase.READY, Phase.SERVING) and state.shards is not None and state.shards.total == 64
            and state.shards.done == 64 and state.health_ready and state.gpus is not None)  # fmt: skip


def write_big_log(path: Path, size: int) -> int:
    chunk = serving_lines(20_000)
    with path.open("wb") as out:
        out.write(STARTUP.read_bytes())
        written = STARTUP.stat().st_size
        while written < size:
            out.write(chunk)
            written += len(chunk)
    return written


async def monitor_attach(sshd, sim) -> float:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    host = ssh_host(sshd)
    await host.connect()
    session = Session(
        Monitor(host, log_path=str(sim.log), port=sim.port, remote_python=PY, sim_gpus=str(sim.gpu_state))
    )
    try:
        async with asyncio.timeout(TIMEOUT_S):
            async for state, _ in session.states():  # the fold `wait` runs
                if full(state):
                    return time.monotonic() - started
    finally:
        await session.close()
        await host.close()
    raise RuntimeError("no full state")


async def tui_attach(sshd, sim) -> float:  # type: ignore[no-untyped-def]
    from tui.ui.app import SglangTui, UiSources

    started = time.monotonic()
    host = ssh_host(sshd)
    await host.connect()
    session = Session(
        Monitor(host, log_path=str(sim.log), port=sim.port, remote_python=PY, sim_gpus=str(sim.gpu_state))
    )
    app = SglangTui(UiSources(batches=session.batches, fold=session.fold, host_label="bench"), read_only=True)
    try:
        async with app.run_test(size=(160, 48)):
            deadline = time.monotonic() + TIMEOUT_S
            while not (full(app.state) and app.log_pane.view.line_count > 0):
                if time.monotonic() > deadline:
                    raise RuntimeError("the TUI showed no full state")
                await asyncio.sleep(0.005)
            shown = time.monotonic() - started
            await session.close()
        return shown
    finally:
        await host.close()


async def whole_file(sshd, sim) -> float:  # type: ignore[no-untyped-def]
    """The same tail + parser + reduce, but made to read the file from byte 0 (no last-launch skip)."""
    started = time.monotonic()
    host = ssh_host(sshd)
    await host.connect()
    parser, state = LogParser(), Readiness()
    try:
        async with asyncio.timeout(TIMEOUT_S):
            async for event in LogTail(host, str(sim.log), last_launch_min_bytes=1 << 62).events():
                now = time.time()
                state = reduce(state, event, now)
                for item in parser.feed(getattr(event, "data", b"")):
                    state = reduce(state, item, now)
                if (
                    state.phase in (Phase.READY, Phase.SERVING)
                    and state.shards
                    and state.shards.total == 64
                    and state.shards.done == 64
                    and state.log_ready
                ):
                    return time.monotonic() - started
    finally:
        await host.close()
    raise RuntimeError("no full state")


def ssh_cat(sshd, sim) -> float:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    subprocess.run([*ssh_argv(sshd), f"tail -c +1 {sim.log}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)  # fmt: skip
    return time.monotonic() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gib", type=float, default=1.0)
    args = ap.parse_args()
    size = int(args.gib * 2**30)
    tmpdir = Path(tempfile.mkdtemp(prefix="bench-attach-", dir="/tmp"))
    free = shutil.disk_usage(tmpdir).free
    if free < 3 * size:
        print(
            f"bench_attach: only {free / 2**30:.1f} GiB free in /tmp; need {3 * size / 2**30:.1f} GiB", file=sys.stderr
        )
        return 1
    rows = []
    try:
        with loopback_sshd() as sshd:
            written = write_big_log(tmpdir / "sim.log", size)
            sim = sim_ready(tmpdir)
            try:
                total = sim.log.stat().st_size
                tail_bytes = total - written
                runs = [
                    ("sglang-tui Monitor over sshd: first full state", lambda: asyncio.run(monitor_attach(sshd, sim))),
                    ("sglang-tui TUI (headless) over sshd: full screen", lambda: asyncio.run(tui_attach(sshd, sim))),
                    ("same tail + parser + reduce reading the whole file", lambda: asyncio.run(whole_file(sshd, sim))),
                    ("`ssh host tail -c +1 LOG > /dev/null` (only moving the bytes)", lambda: ssh_cat(sshd, sim)),
                ]
                for k, (name, run) in enumerate(runs):
                    try:
                        times = [run() for _ in range(2 if k < 2 else 1)]  # the quick ones twice: first / again
                        rows.append([name, " / ".join(f"{t:.2f} s" for t in times)])
                    except Exception as err:  # a missing figure says why
                        rows.append([name, f"failed: {type(err).__name__}: {err}"])
            finally:
                sim.stop()
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    table = md_table(["attach to the log", "time"], rows)
    notes = [
        f"log of {total / 2**30:.2f} GiB: {written / 2**20:,.0f} MiB of an earlier launch's serving lines, then the "
        f"live simulator's launch ({tail_bytes / 2**10:,.0f} KiB) at the end; page cache warm (the file was just written)",
        "full state = the last launch READY/SERVING with 64/64 shards, /health 200 and a GPU snapshot (the "
        "whole-file row: ready in the log with 64/64 shards); times include the SSH connection",
        "the two sglang-tui rows ran twice each (first attach / again); the file lives in /tmp and is deleted at the end",
    ]
    print(
        section(
            "Attach: a 1 GB log whose last launch is near the end",
            table,
            notes,
            f".venv/bin/python bench/bench_attach.py --gib {args.gib:g}",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
