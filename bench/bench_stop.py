"""Stop (a script, not a test): from the kill intent to every process of the server gone and its GPU memory
released (per the simulator's GPU state), on the simulator's real process tree.

sglang-tui's `ServerControl.kill()` / `.terminate()` over LocalHost and over a loopback sshd, and the CLI
`sglang-tui stop --force`, against `kill -9 MAINPID` (what people type), with and without the simulator's
`orphans` fault (ranks that escape their process group). An independent watcher in this process polls /proc
(every process carrying the run's marker) and the GPU state every 10 ms.
`python bench/bench_stop.py [--trials 3]`
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from bench_common import PY, ROOT, loopback_sshd, md_table, section, sim_ready, ssh_host

from tests.helpers.sim import SimServer, _pids_with_marker

NEVER_S = 10.0  # a baseline that leaves processes behind is given this long, then called "never"


def gpu_used(gpu_state: Path) -> int:
    """Bytes the simulated GPUs hold: entries whose pid is alive (not gone, not zombie), as the sim's reader."""
    used = 0
    for entry in gpu_state.glob("proc-*.json"):
        try:
            data = json.loads(entry.read_text())
            state = Path(f"/proc/{int(data['pid'])}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, ValueError, KeyError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            used += int(data.get("used", 0))
    return used


class GoneWatcher(threading.Thread):
    """Records when no process carries the run marker and the GPUs hold nothing of it."""

    def __init__(self, sim: SimServer) -> None:
        super().__init__(daemon=True)
        self.sim = sim
        self.gone_at: float | None = None
        self.left: list[int] = []
        self.held = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.left = _pids_with_marker(self.sim.run_id)
            self.held = gpu_used(self.sim.gpu_state)
            if not self.left and not self.held:
                self.gone_at = time.monotonic()
                return
            time.sleep(0.01)

    def finish(self, timeout: float) -> float | None:
        self.join(timeout)
        self._halt.set()
        self.join(1)
        return self.gone_at


async def control_trial(sim: SimServer, sshd, action: str) -> tuple[float, float | None, bool, tuple[int, int]]:  # type: ignore[no-untyped-def]
    """ServerControl already attached (adopted, as the TUI would be); returns (returned, gone, ok)."""
    from tui.sources.control import ServerControl
    from tui.sources.local import LocalHost

    host = LocalHost() if sshd is None else ssh_host(sshd)
    await host.connect()
    try:
        control = ServerControl(host, port=sim.port, log_path=str(sim.log), remote_python=PY,
                                sim_gpus=str(sim.gpu_state), grace_s=5.0)  # fmt: skip
        await control.process_state_now()
        watcher = GoneWatcher(sim)
        t0 = time.monotonic()
        watcher.start()
        result = await getattr(control, action)()
        returned = time.monotonic() - t0
        gone = await asyncio.to_thread(watcher.finish, NEVER_S)
        return returned, None if gone is None else gone - t0, result.ok, (len(watcher.left), watcher.held)
    finally:
        await host.close()


def cli_trial(sim: SimServer, sshd) -> tuple[float, float | None, bool, tuple[int, int]]:  # type: ignore[no-untyped-def]
    argv = [PY, "-m", "tui", "stop", "127.0.0.1", *sshd.ssh_args(), "--port", str(sim.port), "--log", str(sim.log),
            "--force", "--remote-python", PY, "--sim-gpus", str(sim.gpu_state)]  # fmt: skip
    watcher = GoneWatcher(sim)
    t0 = time.monotonic()
    watcher.start()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, check=False)
    returned = time.monotonic() - t0
    gone = watcher.finish(NEVER_S)
    return returned, None if gone is None else gone - t0, proc.returncode == 0, (len(watcher.left), watcher.held)


def kill9_trial(sim: SimServer) -> tuple[float, float | None, bool, tuple[int, int]]:
    watcher = GoneWatcher(sim)
    t0 = time.monotonic()
    watcher.start()
    os.kill(sim.pid, signal.SIGKILL)
    returned = time.monotonic() - t0
    gone = watcher.finish(NEVER_S)
    return returned, None if gone is None else gone - t0, gone is not None, (len(watcher.left), watcher.held)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()
    rows = []
    with loopback_sshd() as sshd, tempfile.TemporaryDirectory(prefix="bench-stop-") as tmpdir:
        cases = [
            ("sglang-tui `ServerControl.kill()` over LocalHost", None, lambda s: asyncio.run(control_trial(s, None, "kill"))),
            ("sglang-tui `ServerControl.kill()` over sshd", None, lambda s: asyncio.run(control_trial(s, sshd, "kill"))),
            ("sglang-tui `ServerControl.terminate()` (TERM first) over sshd", None,
             lambda s: asyncio.run(control_trial(s, sshd, "terminate"))),
            ("`sglang-tui stop --force` over sshd (CLI: Python start, connect, find, kill)", None,
             lambda s: cli_trial(s, sshd)),
            ("`kill -9 MAINPID` (baseline)", None, kill9_trial),
            ("sglang-tui `ServerControl.kill()` over sshd, `orphans` fault", "orphans",
             lambda s: asyncio.run(control_trial(s, sshd, "kill"))),
            ("`kill -9 MAINPID` (baseline), `orphans` fault", "orphans", kill9_trial),
        ]  # fmt: skip
        for k, (name, fault, trial) in enumerate(cases):
            returned, gone, oks, left = [], [], [], []
            for i in range(args.trials):
                tmp = Path(tmpdir) / f"{k}-{i}"
                tmp.mkdir()
                sim = sim_ready(tmp, fault=fault)
                try:
                    if fault == "orphans":
                        time.sleep(0.5)  # let the escaped ranks settle outside the group
                    r, g, ok, n_left = trial(sim)
                finally:
                    sim.stop()
                returned.append(r)
                gone.append(g)
                oks.append(ok)
                left.append(n_left)
            done = [g for g in gone if g is not None]
            never = len(gone) - len(done)
            gone_text = f"{statistics.fmean(done):.2f} s" if done else "never"
            if never and done:
                gone_text += f" ({never} of {len(gone)} never)"
            elif never:
                procs, held = max(left)
                gone_text = (
                    f"never: {procs} process(es) of the server still alive, {held / 2**30:.0f} GiB of GPU memory "
                    f"held, after {NEVER_S:g} s ({never} of {len(gone)})"
                )
            rows.append([name, len(gone), gone_text, f"{statistics.fmean(returned):.2f} s", f"{sum(oks)}/{len(oks)}"])
    table = md_table(["stop", "trials", "all processes gone + GPU memory released (mean)", "command returned (mean)",
                      "reported ok / confirmed"], rows)  # fmt: skip
    notes = [
        "the simulated 8-GPU server at ready (main process, 8 `sglang::scheduler_TP*` ranks, detokenizer), started "
        "with `setsid` as `nohup … &` would; 'gone' = no process carries the run's marker in /proc/PID/environ and "
        "the simulator's GPU state shows no memory held by a live pid, seen by an independent 10 ms watcher",
        "'command returned' for sglang-tui includes its own confirmation (a rescan and a GPU probe showing the memory "
        "released); for `kill -9` it is the signal call; for the baseline 'reported ok' means it did end everything",
        "ServerControl had already found the server (as the TUI has when the key is pressed); the CLI row includes "
        "Python start-up, the SSH connection and finding the server",
        "over sshd each command (scan, signal+wait, GPU probe) opens a channel and starts the user's login shell: "
        "here bash reading a ~/.bashrc that may be heavy (see the host-cost section's per-command figure)",
    ]
    print(
        section(
            "Stop: kill intent → every process gone and GPU memory released",
            table,
            notes,
            f".venv/bin/python bench/bench_stop.py --trials {args.trials}",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
