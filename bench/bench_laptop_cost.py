"""Cost on the laptop (a script, not a test): the TUI's CPU while the server is quiet, its memory after a million
log lines streamed through it, and its update time while the log pours 10,000 lines a second.

The real Textual app runs headless (`App.run_test`, the same code path minus the terminal writes) over the real
Monitor on an SshHost to a loopback sshd, watching the simulator at ready. Baselines: the laptop-side `ssh`
clients of the usual commands. `python bench/bench_laptop_cost.py [--idle 30] [--lines 1000000] [--pour 10]`
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import (
    PY,
    loopback_sshd,
    md_table,
    pct,
    peak_rss_mib,
    rss_mib,
    section,
    self_cpu_s,
    sim_ready,
    ssh_argv,
    ssh_host,
    tree_cpu_s,
)

from tui.core.events import LogActivity
from tui.sources.monitor import Monitor

WARMUP_S = 3.0
CHUNK_LINES = 20_000
SIZE = (160, 48)


def serving_lines(n: int, start: int = 0) -> bytes:
    out = []
    for i in range(start, start + n):
        stamp = f"2025-11-29 11:{i // 60 % 60:02d}:{i % 60:02d}"
        if i % 12 == 0:
            out.append(f"[{stamp} TP0] Prefill batch, #new-seq: 1, #new-token: {300 + i % 97}, #cached-token: 0, "
                       f"token usage: 0.{i % 90:02d}, #running-req: {i % 40}, #queue-req: 0\n")  # fmt: skip
        elif i % 12 in (5, 11):
            out.append(
                f'[{stamp}] INFO:     10.0.0.{i % 256}:{40000 + i % 20000} - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
            )
        else:
            out.append(f"[{stamp} TP0] Decode batch, #running-req: {i % 40}, #token: {i % 90000}, token usage: 0.{i % 90:02d}, "
                       f"accept len: 3.{i % 90:02d}, accept rate: 0.7{i % 10}, cuda graph: True, "
                       f"gen throughput (token/s): {400 + i % 400}.00, #queue-req: 0\n")  # fmt: skip
    return "".join(out).encode()


POURER = """
import os, sys, time
path, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
data = sys.stdin.buffer.read()
lines = data.splitlines(keepends=True)
per_tick = max(1, rate // 100)
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
start = time.monotonic(); i = 0; k = 0
while time.monotonic() - start < seconds:
    os.write(fd, b"".join(lines[(i + j) % len(lines)] for j in range(per_tick)))
    i += per_tick; k += 1
    time.sleep(max(0.0, start + k * 0.01 - time.monotonic()))
print(i)
"""


class Probe:
    """Instruments an app instance: time of each fold + log-pane append, the last log offset folded."""

    def __init__(self, app) -> None:  # type: ignore[no-untyped-def]
        self.app = app
        self.offset = 0
        self.update_s: list[float] = []
        self.recording = False
        fold = app._fold

        def timed_fold(batch) -> None:  # type: ignore[no-untyped-def]
            batch = tuple(batch)
            for event in batch:
                if isinstance(event, LogActivity):
                    self.offset = event.offset
            started = time.perf_counter()
            fold(batch)
            if self.recording:
                self.update_s.append(time.perf_counter() - started)

        app._fold = timed_fold

    def wrap_pane(self) -> None:
        pane = self.app.log_pane
        append = pane.append

        def timed_append(lines) -> None:  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            append(lines)
            if self.recording and self.update_s:
                self.update_s[-1] += time.perf_counter() - started

        pane.append = timed_append


async def loop_lag(stop: asyncio.Event, out: list[float], period: float = 0.02) -> None:
    """How late the app's event loop wakes a 20 ms timer: what a keypress would wait."""
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(period)
        out.append(time.perf_counter() - started - period)


async def tui_run(sshd, sim, idle_s: float, lines: int, pour_s: float, rate: int) -> dict[str, object]:  # type: ignore[no-untyped-def]
    from tui.sources.session import Session
    from tui.ui.app import SglangTui, UiSources

    res: dict[str, object] = {}
    host = ssh_host(sshd)
    await host.connect()
    monitor = Monitor(host, log_path=str(sim.log), port=sim.port, remote_python=PY, sim_gpus=str(sim.gpu_state))
    session = Session(monitor)  # the TUI's fold: the reducer, and the phase fed back to the Monitor
    app = SglangTui(UiSources(batches=session.batches, fold=session.fold, host_label="bench"), read_only=True)
    probe = Probe(app)
    async with app.run_test(size=SIZE) as pilot:
        probe.wrap_pane()
        await asyncio.sleep(WARMUP_S)
        # quiet server
        res["rss_idle"] = rss_mib()
        cpu0, t0 = self_cpu_s(), time.monotonic()
        await asyncio.sleep(idle_s)
        res["idle_cpu_per_min"] = (self_cpu_s() - cpu0) * 60 / (time.monotonic() - t0)
        # a million lines, paced so the TUI keeps up (nothing piles up in a queue)
        chunk = serving_lines(CHUNK_LINES)
        written = 0
        fd = os.open(sim.log, os.O_WRONLY | os.O_APPEND)
        started, cpu0 = time.monotonic(), self_cpu_s()
        try:
            while written < lines:
                os.write(fd, chunk)
                written += CHUNK_LINES
                size = os.fstat(fd).st_size
                deadline = time.monotonic() + 60
                while probe.offset < size and time.monotonic() < deadline:
                    await asyncio.sleep(0.01)
        finally:
            os.close(fd)
        res["stream_s"] = time.monotonic() - started
        res["stream_cpu"] = self_cpu_s() - cpu0
        res["lines"] = written
        await pilot.pause()
        res["rss_after"] = rss_mib()
        res["rss_peak"] = peak_rss_mib()
        res["kept"] = app.log_pane.view.line_count
        # the log pours `rate` lines a second for pour_s
        size_before = sim.log.stat().st_size
        pourer = subprocess.Popen([PY, "-c", POURER, str(sim.log), str(rate), str(pour_s)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=False)  # fmt: skip
        lag: list[float] = []
        stop = asyncio.Event()
        lagger = asyncio.ensure_future(loop_lag(stop, lag))
        probe.recording = True
        cpu0 = self_cpu_s()
        out, _ = await asyncio.to_thread(pourer.communicate, serving_lines(rate))
        poured_end = time.monotonic()
        size_after = sim.log.stat().st_size
        while probe.offset < size_after and time.monotonic() - poured_end < 30:
            await asyncio.sleep(0.01)
        res["catch_up_s"] = time.monotonic() - poured_end
        res["pour_cpu"] = self_cpu_s() - cpu0
        probe.recording = False
        stop.set()
        await lagger
        res["poured"] = int(out.strip() or 0)
        res["poured_bytes"] = size_after - size_before
        res["update_s"] = probe.update_s
        res["lag_s"] = lag
        await monitor.close()
    await host.close()
    return res


async def monitor_idle(sshd, sim, idle_s: float) -> float:  # type: ignore[no-untyped-def]
    """CPU per minute of the Monitor + reduce alone (what `sglang-tui wait` runs), server quiet."""
    from tui.sources.session import Session

    host = ssh_host(sshd)
    await host.connect()
    session = Session(
        Monitor(host, log_path=str(sim.log), port=sim.port, remote_python=PY, sim_gpus=str(sim.gpu_state))
    )

    async def consume() -> None:
        async for _ in session.states():
            pass

    task = asyncio.ensure_future(consume())
    try:
        await asyncio.sleep(WARMUP_S)
        cpu0, t0 = self_cpu_s(), time.monotonic()
        await asyncio.sleep(idle_s)
        return (self_cpu_s() - cpu0) * 60 / (time.monotonic() - t0)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await session.close()
        await host.close()


def ssh_clients(sshd, sim, idle_s: float, pour_s: float, rate: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Laptop-side CPU of the ssh clients: `watch -n1` + a curl loop while quiet; `tail -F` while the log pours."""
    env = {**os.environ, "TERM": "xterm"}
    res: dict[str, float] = {}
    gpu = f"{PY} -c 'import pynvml'"
    curl = f"while sleep 1; do curl -s -o /dev/null --max-time 30 http://127.0.0.1:{sim.port}/health; done"
    procs = [
        subprocess.Popen([*ssh_argv(sshd, tty=True), f"watch -n1 \"{gpu}\""], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True),
        # a pty, as the watch's: a command with none outlives its killed ssh client on the host (it leaked)
        subprocess.Popen([*ssh_argv(sshd, tty=True), curl], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True),
    ]  # fmt: skip
    try:
        time.sleep(WARMUP_S)
        before = sum(tree_cpu_s(p.pid) for p in procs)
        time.sleep(idle_s)
        res["idle_cpu_per_min"] = (sum(tree_cpu_s(p.pid) for p in procs) - before) * 60 / idle_s
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    tail = subprocess.Popen([*ssh_argv(sshd), f"tail -n 0 -F {sim.log}"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        time.sleep(1.0)
        before = tree_cpu_s(tail.pid)
        pourer = subprocess.Popen([PY, "-c", POURER, str(sim.log), str(rate), str(pour_s)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE)  # fmt: skip
        pourer.communicate(serving_lines(rate))
        time.sleep(0.5)
        res["pour_cpu"] = tree_cpu_s(tail.pid) - before
        res["tail_rss"] = rss_mib(tail.pid)
    finally:
        os.killpg(tail.pid, signal.SIGKILL)
        tail.wait()
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--idle", type=float, default=30.0, help="seconds of quiet server measured")
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--pour", type=float, default=10.0, help="seconds of pouring")
    ap.add_argument("--rate", type=int, default=10_000, help="lines a second while pouring")
    args = ap.parse_args()
    with loopback_sshd() as sshd, tempfile.TemporaryDirectory(prefix="bench-laptop-") as tmp:
        sim = sim_ready(Path(tmp))
        try:
            # the Monitor alone first, while the log is small (attaching later would re-read the million lines)
            monitor_cpu = asyncio.run(monitor_idle(sshd, sim, min(args.idle, 15.0)))
            tui = asyncio.run(tui_run(sshd, sim, args.idle, args.lines, args.pour, args.rate))
            base = ssh_clients(sshd, sim, min(args.idle, 15.0), args.pour, args.rate)
        finally:
            sim.stop()
    upd, lag = tui["update_s"], tui["lag_s"]
    assert isinstance(upd, list) and isinstance(lag, list)
    lines = int(tui["lines"])  # type: ignore[call-overload]
    rows = [
        ["CPU while the server is quiet (per minute)", f"{tui['idle_cpu_per_min']:.2f} s",
         f"{base['idle_cpu_per_min']:.2f} s (`ssh -t watch -n1` + `ssh` curl loop clients)"],
        ["… of which the Monitor + reduce alone (no UI; what `wait` runs)", f"{monitor_cpu:.2f} s", "—"],
        ["RSS attached, quiet", f"{tui['rss_idle']:.0f} MiB", "—"],
        [f"RSS after {lines:,} log lines streamed through (peak)", f"{tui['rss_after']:.0f} MiB ({tui['rss_peak']:.0f} MiB)",
         f"{base['tail_rss']:.0f} MiB (`ssh tail -F` client)"],
        [f"{lines:,} lines end to end (ssh → tail → parse → fold → log pane)",
         f"{tui['stream_s']:.1f} s, {lines / float(tui['stream_s']):,.0f} lines/s, {tui['stream_cpu']:.1f} s CPU", "—"],
        [f"CPU while the log pours {args.rate:,} lines/s for {args.pour:g} s", f"{tui['pour_cpu']:.2f} s",
         f"{base['pour_cpu']:.2f} s (`ssh tail -F` client to /dev/null; no terminal rendering)"],
        ["update time per batch while pouring (fold + log pane), p50 / p99 / max",
         f"{1000 * pct(upd, 50):.1f} / {1000 * pct(upd, 99):.1f} / {1000 * max(upd, default=0):.1f} ms ({len(upd)} batches)", "—"],
        ["event-loop lag while pouring (what a key press waits), p50 / p99 / max",
         f"{1000 * pct(lag, 50):.1f} / {1000 * pct(lag, 99):.1f} / {1000 * max(lag, default=0):.1f} ms", "—"],
        ["behind the log when the pour stopped", f"caught up {tui['catch_up_s']:.2f} s later", "—"],
    ]  # fmt: skip
    table = md_table(["what", "sglang-tui (TUI, headless)", "baseline"], rows)
    notes = [
        f"the Textual app headless at {SIZE[0]}x{SIZE[1]} via `run_test` over the real Monitor (tail, GPU probe on the "
        "simulator, /health, process scan) on an SshHost to a loopback sshd; CPU and RSS are of this one process",
        f"quiet: simulator at ready with no traffic, {args.idle:g} s measured (Monitor alone and baselines: "
        f"{min(args.idle, 15.0):g} s) and scaled to a minute",
        f"the million lines are written {CHUNK_LINES:,} at a time, each chunk once the TUI folded the previous one "
        f"(so the figure is its end-to-end throughput); the log pane keeps {tui['kept']:,} lines",
        f"pour: a separate process appends {args.rate // 100} lines every 10 ms "
        f"({tui['poured']:,} lines, {int(tui['poured_bytes']) / 2**20:.1f} MiB)",  # type: ignore[call-overload]
        "a terminal's own rendering of `tail -F` (the baseline's real cost at 10,000 lines/s) is not measured",
    ]
    print(
        section(
            "Cost on the laptop: the TUI idle, after a million lines, and under a pouring log",
            table,
            notes,
            f".venv/bin/python bench/bench_laptop_cost.py --idle {args.idle:g} --lines {args.lines} "
            f"--pour {args.pour:g}",
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
