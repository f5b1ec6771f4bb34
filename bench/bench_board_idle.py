"""The fleet board and `export` at rest (a script, not a test): N ready servers on one SSH host (a loopback sshd),
nothing changing on them. `python bench/bench_board_idle.py [--servers 24] [--seconds 60] [--size 200x50]`

- the board: `sglang-tui fleet` in tmux (COLSxROWS), every server a `testhost:PORT:LOG` target over the one
  connection; once its summary says all N ready and it settled, the CPU seconds per minute of its process
  (utime + stime from /proc) over the window, and its memory (RSS);
- `export --listen` over the same N targets: once /metrics says all N ready and it settled, its CPU seconds per
  minute over the same kind of window, and one scrape's time (curl's own request time, p50 of a few).

The servers are the simulator (2 ranks, ready, no traffic); the host side (sshd and the commands the Monitors run
there) is not counted: the laptop's side is what the issue bounds (1 CPU-second per minute for 24 servers).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import (
    FIRED_UP,
    PY,
    ROOT,
    loopback_sshd,
    md_table,
    pct,
    process_cpu_s,
    rss_mib,
    section,
    tree_pids,
    wait_until,
)

from tests.helpers.sim import SimServer, start_sim
from tests.helpers.sshd import free_port

SETTLE_S = 15.0  # after all ready: /model_info, the last lines, the first rescans


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def ready_sims(base: Path, count: int) -> list[SimServer]:
    """`count` simulators started at once, each waited for until its log says fired up."""
    sims = []
    for i in range(count):
        where = base / f"sim{i}"
        where.mkdir()
        sims.append(start_sim(where, speed=200.0, tp=2, shards=4))
    for sim in sims:
        if not wait_until(lambda s=sim: s.log.exists() and FIRED_UP in s.log.read_bytes(), 300, 0.2):  # type: ignore[misc]
            raise SystemExit(f"simulator {sim.port} did not reach ready")
    return sims


def cpu_per_minute(pid: int, seconds: float) -> float:
    before = process_cpu_s(pid)
    time.sleep(seconds)
    return (process_cpu_s(pid) - before) * 60.0 / seconds


def board(config: Path, targets: list[str], env: dict[str, str], size: tuple[int, int], seconds: float) -> tuple[float, float]:  # fmt: skip
    """(CPU s per minute, RSS MiB) of the board at rest."""
    session = f"bench-board-{os.getpid()}"
    command = " ".join([PY, "-m", "tui", "fleet", "--read-only", "--no-history", "--ssh-config", str(config),
                        "--remote-python", PY, *targets])  # fmt: skip
    argv = ["tmux", "new-session", "-d", "-s", session, "-c", str(ROOT), "-x", str(size[0]), "-y", str(size[1])]
    subprocess.run([*argv, "-e", f"XDG_STATE_HOME={env['XDG_STATE_HOME']}", "-e",
                    f"XDG_CONFIG_HOME={env['XDG_CONFIG_HOME']}", command], check=True)  # fmt: skip
    try:
        want = f"{len(targets)} ready"
        if not wait_until(lambda: want in _tmux("capture-pane", "-p", "-t", session), 300, 0.5):
            raise SystemExit(f"the board never said {want!r}:\n{_tmux('capture-pane', '-p', '-t', session)}")
        pane = int(_tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())
        pid = next(p for p in tree_pids(pane) if b"fleet" in Path(f"/proc/{p}/cmdline").read_bytes())  # not its sh
        time.sleep(SETTLE_S)
        return cpu_per_minute(pid, seconds), rss_mib(pid)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def scrape(port: int) -> tuple[float, str]:
    done = subprocess.run(["curl", "-s", "-m", "10", "-w", "\n%{time_total}", f"http://127.0.0.1:{port}/metrics"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    body, _, took = done.stdout.rpartition("\n")
    return float(took or "nan"), body


def export(config: Path, targets: list[str], env: dict[str, str], seconds: float) -> tuple[float, float, float]:
    """(CPU s per minute, RSS MiB, one scrape's p50 seconds) of export at rest."""
    port = free_port()
    argv = [PY, "-m", "tui", "export", "--listen", f"127.0.0.1:{port}", "--no-history", "--ssh-config", str(config),
            "--remote-python", PY, *targets]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        want = len(targets)
        if not wait_until(lambda: scrape(port)[1].count("sglang_tui_ready{") and
                          sum(line.endswith(" 1") for line in scrape(port)[1].splitlines()
                              if line.startswith("sglang_tui_ready{")) == want, 300, 1.0):  # fmt: skip
            raise SystemExit(f"export never said {want} ready")
        time.sleep(SETTLE_S)
        cpu = cpu_per_minute(proc.pid, seconds)
        took = [scrape(port)[0] for _ in range(5)]
        return cpu, rss_mib(proc.pid), pct(took, 50)
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--servers", type=int, default=24)
    ap.add_argument("--seconds", type=float, default=60.0, help="each measuring window (default 60)")
    ap.add_argument("--size", default="200x50", help="the board's terminal, COLSxROWS (default 200x50)")
    args = ap.parse_args()
    if shutil.which("tmux") is None or shutil.which("curl") is None:
        print("bench_board_idle: needs tmux and curl", file=sys.stderr)
        return 2
    size = tuple(int(x) for x in args.size.lower().split("x"))
    with tempfile.TemporaryDirectory(prefix="bench-board-idle-") as tmp, loopback_sshd() as sshd:
        base = Path(tmp)
        env = {**os.environ, "XDG_STATE_HOME": str(base / "state"), "XDG_CONFIG_HOME": str(base / "config")}
        sims = ready_sims(base, args.servers)
        try:
            targets = [f"testhost:{s.port}:{s.log}" for s in sims]
            board_cpu, board_rss = board(sshd.ssh_config, targets, env, (size[0], size[1]), args.seconds)
            export_cpu, export_rss, scrape_s = export(sshd.ssh_config, targets, env, args.seconds)
        finally:
            for sim in sims:
                sim.stop()
    rows = [
        [f"the board (`fleet` in tmux {args.size}), {args.servers} ready servers", f"{board_cpu:.2f} s",
         f"{board_rss:.0f} MiB", ""],
        [f"`export --listen`, the same {args.servers} targets", f"{export_cpu:.2f} s", f"{export_rss:.0f} MiB",
         f"{scrape_s * 1000:.1f} ms"],
    ]  # fmt: skip
    load = os.getloadavg()
    notes = [
        f"each window {args.seconds:g} s, after every row said ready and {SETTLE_S:g} s of settling; the process's "
        "own CPU (utime + stime from /proc); every server over one loopback sshd (one SSH connection)",
        "the issue's bound: 1 CPU-second per minute for 24 ready servers, for the board and for export alike",
        f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs",
    ]
    table = md_table(["at rest", "CPU per minute", "memory (RSS)", "one scrape (p50)"], rows)
    print(section(f"The fleet board and export at rest: {args.servers} ready servers on one SSH host", table, notes,
                  f".venv/bin/python bench/bench_board_idle.py --servers {args.servers} --seconds {args.seconds:g}"))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
