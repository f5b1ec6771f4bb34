"""Knowing it is ready (a script, not a test): from the simulator's /health turning 200 to the tool saying so.

t0 is when the simulator writes "The server is fired up and ready to roll!" (it sets /health to 200 just before
writing it), seen by a separate process polling the log file every millisecond. Compared: `sglang-tui wait`
(local and over a loopback sshd) exiting 0, the TUI (headless, real Monitor) showing READY in its header, a
`curl /health` loop every second, and polling by hand every few minutes (analytic: half the interval).
`python bench/bench_ready_latency.py [--trials 4]`
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

from bench_common import FIRED_UP, PY, ROOT, default_of, loopback_sshd, md_table, section, ssh_host

from tests.helpers.sim import start_sim
from tui.sources.health import HealthPoller

SPEED = 200.0
FAST_S = default_of(HealthPoller.__init__, "fast_interval")
TIMEOUT_S = 60.0

WATCHER = f"""
import os, sys, time
path, needle, offset, tail = sys.argv[1], {FIRED_UP!r}, 0, b""
while True:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        data = b""
    if data:
        offset += len(data)
        if needle in tail + data:
            print(repr(time.monotonic()), flush=True)
            break
        tail = (tail + data)[-len(needle):]
    time.sleep(0.001)
"""


def start_watcher(log: Path) -> subprocess.Popen[str]:
    """A separate process that prints time.monotonic() (system-wide CLOCK_MONOTONIC) when the log says ready."""
    return subprocess.Popen([PY, "-c", WATCHER, str(log)], stdout=subprocess.PIPE, text=True)


def t_ready(watcher: subprocess.Popen[str]) -> float:
    out, _ = watcher.communicate(timeout=TIMEOUT_S)
    return float(out.strip())


def wait_cli(tmp: Path, sshd=None) -> tuple[float, float, int]:  # type: ignore[no-untyped-def]
    """`sglang-tui wait --json` started with the simulator: latency from ready to its ready JSON line, to its
    exit, and its exit code."""
    sim = start_sim(tmp, speed=SPEED)
    watcher = start_watcher(sim.log)
    try:
        target = ["local"] if sshd is None else ["127.0.0.1", *sshd.ssh_args()]
        argv = [PY, "-m", "tui", "wait", *target, "--log", str(sim.log), "--port", str(sim.port), "--json",
                "--sim-gpus", str(sim.gpu_state), "--remote-python", PY, "--timeout", str(TIMEOUT_S)]  # fmt: skip
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        said: list[float] = []

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                if not said and json.loads(line).get("phase") in ("ready", "serving"):
                    said.append(time.monotonic())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while proc.poll() is None:
            time.sleep(0.002)
        exited = time.monotonic()
        reader.join(5)
        ready = t_ready(watcher)
        return (said[0] if said else float("nan")) - ready, exited - ready, proc.returncode
    finally:
        watcher.kill()
        sim.stop()


def curl_loop(tmp: Path) -> float:
    """`while :; do curl /health; sleep 1; done`: from ready to the first 200 it prints."""
    sim = start_sim(tmp, speed=SPEED)
    watcher = start_watcher(sim.log)
    loop = (
        f"while :; do curl -s -o /dev/null -w '%{{http_code}}\\n' --max-time 30 http://127.0.0.1:{sim.port}/health; "
        "sleep 1; done"
    )
    health = subprocess.Popen(["sh", "-c", loop], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert health.stdout is not None
        for line in health.stdout:
            if line.strip() == "200":
                seen = time.monotonic()
                break
        return seen - t_ready(watcher)
    finally:
        os.killpg(health.pid, signal.SIGKILL)
        health.wait()
        watcher.kill()
        sim.stop()


async def tui_trial(tmp: Path, sshd) -> float:  # type: ignore[no-untyped-def]
    """The Textual app headless (run_test) over the real Monitor on SshHost: ready → header shows READY."""
    from tui.sources.monitor import Monitor
    from tui.ui.app import SglangTui, UiSources
    from tui.ui.panes.header import HeaderPane

    sim = start_sim(tmp, speed=SPEED)
    watcher = start_watcher(sim.log)
    host = ssh_host(sshd)
    try:
        await host.connect()
        monitor = Monitor(host, log_path=str(sim.log), port=sim.port, remote_python=PY, sim_gpus=str(sim.gpu_state))
        app = SglangTui(UiSources(batches=monitor.batches, host_label="bench"), read_only=True)
        async with app.run_test(size=(160, 48)):
            header = app.query_one(HeaderPane)
            deadline = time.monotonic() + TIMEOUT_S
            while not any(word in header.shown for word in ("READY", "SERVING")):
                if time.monotonic() > deadline:
                    raise RuntimeError("the TUI did not show READY")
                await asyncio.sleep(0.002)
            shown = time.monotonic()
            await monitor.close()
        return shown - await asyncio.to_thread(t_ready, watcher)
    finally:
        watcher.kill()
        await host.close()
        sim.stop()


def fmt_s(values: list[float]) -> tuple[str, str, str]:
    if not values:
        return "n/a", "n/a", "n/a"
    return f"{statistics.fmean(values):.2f} s", f"{min(values):.2f} s", f"{max(values):.2f} s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()
    n = args.trials
    rows = []
    with loopback_sshd() as sshd, tempfile.TemporaryDirectory(prefix="bench-ready-") as tmpdir:
        tmp = Path(tmpdir)

        def fresh(i: int, name: str) -> Path:
            path = tmp / f"{name}-{i}"
            path.mkdir()
            return path

        local = [wait_cli(fresh(i, "wl")) for i in range(n)]
        remote = [wait_cli(fresh(i, "ws"), sshd) for i in range(n)]
        tui: list[float] = []
        tui_error = ""
        try:
            tui = [asyncio.run(tui_trial(fresh(i, "tui"), sshd)) for i in range(n)]
        except Exception as err:  # the figure is reported missing, with why
            tui_error = f"{type(err).__name__}: {err}"
        curls = [curl_loop(fresh(i, "curl")) for i in range(2 * n)]

    bad = [code for *_, code in local + remote if code != 0]
    rows.append(["`sglang-tui wait local`: ready JSON line printed", len(local), *fmt_s([x for x, _, _ in local])])
    rows.append(["`sglang-tui wait local`: process exited 0", len(local), *fmt_s([x for _, x, _ in local])])
    rows.append(
        ["`sglang-tui wait` over sshd: ready JSON line printed", len(remote), *fmt_s([x for x, _, _ in remote])]
    )
    rows.append(["`sglang-tui wait` over sshd: process exited 0", len(remote), *fmt_s([x for _, x, _ in remote])])
    rows.append(["TUI header shows READY (headless, Monitor over sshd)", len(tui), *fmt_s(tui)])
    rows.append(["`while :; do curl /health; sleep 1; done`", len(curls), *fmt_s(curls)])
    for minutes in (2, 5):
        rows.append([f"polling by hand every {minutes} min (analytic: interval / 2)", "—", f"{minutes * 30:.0f} s", "0 s",
                     f"{minutes * 60:.0f} s"])  # fmt: skip
    table = md_table(["who says ready", "trials", "mean", "min", "max"], rows)
    notes = [
        f"simulated 8-GPU EAGLE3 startup at {SPEED:g}x; t0 = the simulator's own 'fired up' line (its /health "
        f"answers 200 from then on, each answer taking its 1-token generation, {1000 * max(1 / SPEED, 0.05):.0f} ms here)",
        f"sglang-tui polls /health every {FAST_S:g} s once the log shows uvicorn up (never two at once); `wait` and the TUI "
        "were started with the simulator, so their own start-up is not in the figure",
        "goal: under 0.5 s on average from /health 200 to the tool saying ready",
    ]
    if bad:
        notes.append(f"WARNING: `wait` exit codes other than 0: {bad}")
    if tui_error:
        notes.append(f"TUI figure missing: {tui_error}")
    print(
        section(
            "Knowing it is ready: /health 200 → the tool says so",
            table,
            notes,
            f".venv/bin/python bench/bench_ready_latency.py --trials {n}",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
