"""Attach to a huge log (a script, not a test; issue 21): `sglang-tui wait` on a 2 GiB log whose server is ready,
this tree against a baseline revision (today's code path: a grep of the whole file for the last launch, then every
byte after it read and parsed), in one run.

The log: the simulator's own launch (server_args=, shards, KV cache, CUDA graphs, fired up), then 2 GiB of serving
lines appended to it while the simulator stays up and answers /health, as a server that has served for days. Each
`wait` row is one `wait … --json` process: the time from its start to its first ready line and to its exit (0),
and its peak RSS (wait4's ru_maxrss). The "current" rows run the Session `wait` and the TUI fold with until the
state holds the log's last byte (where the server stands now: its latest decode line). "cold": the log's pages
are dropped from the page cache first (posix_fadvise DONTNEED on that file alone), as for a log written days ago.
The log lives in /tmp and is deleted at the end.

    python bench/bench_attach_huge.py [--gib 2] [--against REV] [--no-ssh] [--runs 3]

REV defaults to 5fc3462, the tree before issue 21's attach work (today's code path when it was written).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import PY, ROOT, loopback_sshd, md_table, section, sim_ready
from bench_laptop_cost import serving_lines

TIMEOUT_S = 180
# the Session that `wait` folds with, until its state has read the whole log (run under each tree)
CURRENT = """
import asyncio, sys, time
from tui.sources.local import LocalHost
from tui.sources.monitor import Monitor
from tui.sources.session import Session

async def main(log, port, gpus, size):
    started = time.monotonic()
    host = LocalHost()
    await host.connect()
    session = Session(Monitor(host, log_path=log, port=port, sim_gpus=gpus))
    async for state, _ in session.states():
        if state.log_offset >= size and state.decode is not None:
            print(f"{time.monotonic() - started:.2f}")
            break
    await session.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])))
"""


def uncache(path: Path) -> None:
    """Drop this file's pages from the page cache (no other file's)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def grow(log: Path, size: int) -> int:
    """Append serving lines until the log holds `size` bytes; returns the bytes appended."""
    chunk = serving_lines(20_000)
    added = 0
    with log.open("ab") as out:
        while log.stat().st_size + len(chunk) <= size:
            out.write(chunk)
            out.flush()
            added += len(chunk)
    return added


def tree_at(rev: str, into: Path) -> Path:
    """The `tui/` package of git revision `rev`, unpacked under `into` (run with PYTHONPATH=into)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "tui"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def current_once(tree: Path, sim) -> tuple[str, str, str, str]:  # type: ignore[no-untyped-def]
    """The Session until its state holds the log's last byte: ("-", "-", that time, peak RSS)."""
    size = sim.log.stat().st_size
    argv = [PY, "-c", CURRENT, str(sim.log), str(sim.port), str(sim.gpu_state), str(size)]
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    out = proc.stdout.read() if proc.stdout is not None else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    took = (
        f"{float(out):.2f} s" if out.strip() else f"none ({time.monotonic() - started:.1f} s, exit {proc.returncode})"
    )
    return "-", "-", took, f"{usage.ru_maxrss / 1024:.0f} MiB"


def wait_once(tree: Path, target: list[str], sim, history: Path) -> tuple[str, str, str, str]:  # type: ignore[no-untyped-def]
    """One `wait --json` against the simulator: (exit, first ready line, exit time, peak RSS). `target` is the
    host and any options (`--no-health`: ready rests on the log's fired-up line, so on reading it)."""
    argv = [PY, "-m", "tui", "wait", *target, "--log", str(sim.log), "--port", str(sim.port),
            "--sim-gpus", str(sim.gpu_state), "--json", "--timeout", str(TIMEOUT_S)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tree), "SGLANG_TUI_HISTORY": str(history)}
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    ready_at = None
    for line in proc.stdout:
        if ready_at is None and json.loads(line)["phase"] in ("ready", "serving"):
            ready_at = time.monotonic() - started
    _, status, usage = os.wait4(proc.pid, 0)
    ended = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    ready = f"{ready_at:.2f} s" if ready_at is not None else "never"
    return str(proc.returncode), ready, f"{ended:.2f} s", f"{usage.ru_maxrss / 1024:.0f} MiB"


def median_run(runs: list[tuple[str, str, str, str]]) -> tuple[str, str, str, str]:
    """The run with the median exit time (its own figures, not a mix), its exit codes all shown."""
    ordered = sorted(runs, key=lambda r: float(r[2].split()[0]) if r[2][0].isdigit() else float("inf"))
    code, ready, done, rss = ordered[len(ordered) // 2]
    codes = sorted({r[0] for r in runs})
    return "/".join(codes), ready, done + (f" (median of {len(runs)})" if len(runs) > 1 else ""), rss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--against", default="5fc3462", help="the baseline revision (default: the tree before issue 21)")
    ap.add_argument("--no-ssh", action="store_true", help="local runs only (no loopback sshd)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each `wait` row (the median is shown)")
    args = ap.parse_args()
    size = int(args.gib * 2**30)
    tmp = Path(tempfile.mkdtemp(prefix="bench-attach-huge-", dir="/tmp"))
    if shutil.disk_usage(tmp).free < size + (1 << 30):
        print(f"bench_attach_huge: need {args.gib + 1:g} GiB free in /tmp", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
        return 1
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.against], capture_output=True,
                         text=True, check=True).stdout.strip()  # fmt: skip
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip
    rows = []
    try:
        base = tree_at(args.against, tmp / "base")
        (tmp / "run").mkdir()
        sim = sim_ready(tmp / "run", tp=2, shards=16)
        try:
            startup = sim.log.stat().st_size
            appended = grow(sim.log, size)
            total = sim.log.stat().st_size
            trees = [(f"this tree ({head})", ROOT), (f"baseline {rev}", base)]
            runs = [
                ("wait, local, warm", ["local"], False),
                ("wait, local, cold", ["local"], True),
                ("wait --no-health (ready from the log), local, cold", ["local", "--no-health"], True),
            ]
            ssh = None if args.no_ssh else loopback_sshd()
            sshd = ssh.__enter__() if ssh is not None else None
            try:
                if sshd is not None:
                    runs.append(("wait, over sshd, cold", ["127.0.0.1", *sshd.ssh_args()], True))
                runs.append(("current state, local, cold", [], True))
                for what, target, cold in runs:
                    tries: dict[str, list[tuple[str, str, str, str]]] = {name: [] for name, _ in trees}
                    for _ in range(args.runs if target else 1):  # alternating, so both see the same noise
                        for name, tree in trees:
                            if cold:
                                uncache(sim.log)
                            history = tmp / f"history-{len(rows)}-{len(tries[name])}.sqlite3"
                            tries[name].append(
                                wait_once(tree, target, sim, history) if target else current_once(tree, sim)
                            )
                    rows += [[f"{what}: {name}", *median_run(tries[name])] for name, _ in trees]
            finally:
                if ssh is not None:
                    ssh.__exit__(None, None, None)
        finally:
            sim.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = md_table(["on the log", "exit code", "first ready line", "done", "peak RSS"], rows)
    notes = [
        f"log of {total / 2**30:.2f} GiB: the simulator's launch ({startup / 2**10:,.0f} KiB, TP2, 16 shards, ready) "
        f"then {appended / 2**20:,.0f} MiB of serving lines, just written (warm rows: in the page cache)",
        f"this tree reads the launch's first 2 MiB and the log's last 4 MiB; the baseline ({rev}) greps the whole "
        "file for the last `server_args=` line and reads and parses everything after it",
        "with /health probed, `wait` is ready on this server's /health 200 and /model_info before the log is read, in "
        "both trees; with --no-health it rests on the log's fired-up line, so on finding and reading the launch",
        "times from the process's start (Python's imports included) to its first ready/serving JSON line and to its "
        "exit (done); current state: until the Session's state holds the log's last byte and a decode line; peak RSS "
        "is that process's own; cold: the log's pages dropped from the page cache first; the log is deleted at the end",
    ]
    print(section(f"Attach: `wait` on a {args.gib:g} GiB log whose server is ready", table, notes,
                  f".venv/bin/python bench/bench_attach_huge.py --gib {args.gib:g} --against {args.against}"))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
