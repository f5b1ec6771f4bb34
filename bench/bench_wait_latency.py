"""How long after the server's /health first answers 200 does `sglang-tui wait` exit? Locally and over sshd.

Runs the simulator, a `python -m tui wait` subprocess, and a 10 ms /health watcher of its own (direct to the
port, the ground truth), then prints the gap per run and the median. Usage:
    .venv/bin/python bench/bench_wait_latency.py [--runs 5] [--speed 100]
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers.sim import ROOT, start_sim  # noqa: E402
from tests.helpers.sshd import Sshd  # noqa: E402


def first_200(port: int, stop: threading.Event, found: list[float]) -> None:
    """Poll /health every 10 ms until it answers 200; record that moment (monotonic)."""
    while not stop.is_set():
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/health")
            status = conn.getresponse().status
            conn.close()
            if status == 200:
                found.append(time.monotonic())
                return
        except OSError:
            pass
        time.sleep(0.01)


def one_run(sshd: Sshd | None, speed: float) -> tuple[float, float]:
    """(seconds from first /health 200 to wait's exit, wait's total run time)."""
    with tempfile.TemporaryDirectory() as tmp:
        sim = start_sim(Path(tmp), speed=speed, tp=8, shards=64)
        stop, found = threading.Event(), []
        watcher = threading.Thread(target=first_200, args=(sim.port, stop, found), daemon=True)
        watcher.start()
        target = ["127.0.0.1", *sshd.ssh_args()] if sshd else ["local"]
        started = time.monotonic()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "tui", "wait", *target, "--log", str(sim.log), "--port", str(sim.port),
                 "--sim-gpus", str(sim.gpu_state), "--timeout", "120"],
                cwd=ROOT, capture_output=True, text=True,
            )  # fmt: skip
            exited = time.monotonic()
        finally:
            stop.set()
            sim.stop()
        watcher.join(2)
        if proc.returncode != 0 or not found:
            raise SystemExit(f"wait exited {proc.returncode} (200 seen: {bool(found)}): {proc.stderr[-400:]}")
        return exited - found[0], exited - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--speed", type=float, default=100.0, help="simulator time factor")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sshd = Sshd(Path(tmp) / "sshd").start()
        try:
            for label, via in (("local", None), ("sshd", sshd)):
                gaps = []
                for _ in range(args.runs):
                    gap, total = one_run(via, args.speed)
                    gaps.append(gap)
                    print(f"{label:5}  /health 200 -> wait exit: {gap * 1000:7.0f} ms   (wait ran {total:.1f} s)")
                print(
                    f"{label:5}  median {statistics.median(gaps) * 1000:.0f} ms, "
                    f"min {min(gaps) * 1000:.0f} ms, max {max(gaps) * 1000:.0f} ms over {len(gaps)} runs"
                )
        finally:
            sshd.stop()


if __name__ == "__main__":
    main()
