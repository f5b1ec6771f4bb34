"""Cost on the GPU host (a script, not a test): CPU seconds per minute of watching a ready server at a 1 s tick.

Everything the watcher makes run on the host hangs under a dedicated loopback sshd (sessions, shells, tail, the
GPU probe, /proc scans, curl), so the CPU of that sshd's process tree, read from /proc/PID/stat (utime+stime of
live processes plus cutime+cstime of reaped ones), is the host-side cost. The simulated server's own CPU is
not counted. `python bench/bench_host_cost.py [--seconds 20]`
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bench_common import PY, default_of, loopback_sshd, md_table, section, sim_ready, ssh_argv, ssh_host, tree_cpu_s

from tui.core.events import GpuSnapshot, HealthResult
from tui.core.fold import Fold
from tui.core.state import Readiness
from tui.sources.health import HealthPoller
from tui.sources.monitor import Monitor

WARMUP_S = 3.0
SCAN_S = float(default_of(Monitor.__init__, "process_interval"))  # type: ignore[arg-type]
READY_HEALTH_S = float(default_of(HealthPoller.__init__, "ready_interval"))  # type: ignore[arg-type]


def window(sshd, seconds: float) -> float:  # type: ignore[no-untyped-def]
    """CPU seconds the sshd tree used over the next `seconds` (blocking)."""
    before = tree_cpu_s(sshd.proc.pid)
    time.sleep(seconds)
    return tree_cpu_s(sshd.proc.pid) - before


async def sglang_tui(
    sshd,
    sim,
    seconds: float,
    *,
    gpus: bool = True,
    processes: bool = True,  # type: ignore[no-untyped-def]
    activity: bool = True,
) -> tuple[float, str]:
    host = ssh_host(sshd)
    await host.connect()
    monitor = Monitor(host, log_path=str(sim.log), port=sim.port, remote_python=PY, sim_gpus=str(sim.gpu_state),
                      gpu_interval=1.0, gpus=gpus, processes=processes, activity=activity)  # fmt: skip
    counts = {"gpu": 0, "health": 0}
    counting = False

    fold = Fold(feedback=monitor.set_phase)  # the fold `wait` runs

    async def consume() -> None:
        state = Readiness()
        async for batch in monitor.batches():
            state = fold(state, batch, time.time())
            for event in batch:
                if counting and isinstance(event, GpuSnapshot) and event.error is None:
                    counts["gpu"] += 1
                if counting and isinstance(event, HealthResult):
                    counts["health"] += 1

    task = asyncio.ensure_future(consume())
    try:
        await asyncio.sleep(WARMUP_S)
        counting = True
        cpu = await asyncio.to_thread(window, sshd, seconds)
        counting = False
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await monitor.close()
        await host.close()
    return cpu, f"{counts['gpu']} GPU snapshots, {counts['health']} HTTP probes in the window"


async def per_command(sshd, n: int = 5) -> float:  # type: ignore[no-untyped-def]
    """Host CPU of one `true` on a new exec channel: sshd's session + the user's login shell and its rc files."""
    host = ssh_host(sshd)
    await host.connect()
    try:
        await host.run("true")
        before = tree_cpu_s(sshd.proc.pid)
        for _ in range(n):
            await host.run("true")
        return (tree_cpu_s(sshd.proc.pid) - before) / n
    finally:
        await host.close()


def gpu_stand_in(sim) -> str:  # type: ignore[no-untyped-def]
    """One process per tick that imports NVML's Python binding and reads the simulated GPU state (a stand-in for
    nvidia-smi, which needs a GPU; a real nvidia-smi spawn costs more: 25 ms to 1.5 s)."""
    code = (f"import pynvml, json, glob; [json.load(open(f)) for f in glob.glob({str(sim.gpu_state)!r} + '/*.json')]; "
            "print('GPU table')")  # fmt: skip
    return f"{shlex.quote(PY)} -c {shlex.quote(code)}"


def watch_and_curl(sshd, sim, seconds: float) -> tuple[float, str]:  # type: ignore[no-untyped-def]
    env = {**os.environ, "TERM": "xterm"}
    watch = subprocess.Popen([*ssh_argv(sshd, tty=True), f"watch -n1 {shlex.quote(gpu_stand_in(sim))}"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                             start_new_session=True)  # fmt: skip
    curl = f"while sleep 1; do curl -s -o /dev/null --max-time 30 http://127.0.0.1:{sim.port}/health; done"
    # a pty, as the watch's: a command with none outlives its killed ssh client on the host (it leaked, one a run)
    loop = subprocess.Popen([*ssh_argv(sshd, tty=True), curl], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        time.sleep(WARMUP_S)
        cpu = window(sshd, seconds)
    finally:
        for proc in (watch, loop):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return cpu, "two ssh sessions: `watch -n1` (pty) and a `while sleep 1; do curl /health; done` loop"


def ssh_per_check(sshd, sim, seconds: float) -> tuple[float, str]:  # type: ignore[no-untyped-def]
    check = (f"wc -l {shlex.quote(str(sim.log))}; tail -5 {shlex.quote(str(sim.log))}; "
             f"curl -s --max-time 30 http://127.0.0.1:{sim.port}/v1/models || echo Not ready")  # fmt: skip
    before = tree_cpu_s(sshd.proc.pid)
    started = time.monotonic()
    checks = 0
    while time.monotonic() - started < seconds:
        subprocess.run([*ssh_argv(sshd), check], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)  # fmt: skip
        checks += 1
        time.sleep(1.0)
    cpu = tree_cpu_s(sshd.proc.pid) - before
    elapsed = time.monotonic() - started
    return cpu * seconds / elapsed, f"{checks} checks, {1000 * cpu / checks:.1f} ms CPU each on the host"


def act_cost(sim, n: int = 200) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """CPU ms of one activity block (`act`, issue 13) over the simulator's tree, run n times in one sh (`times`)."""
    from tui.sources import control_cmds

    main = sim.pid
    pids = [main] + [int(x) for x in Path(f"/proc/{main}/task/{main}/children").read_text().split()]
    known = " ".join(f"{p}:{Path(f'/proc/{p}/stat').read_text().rsplit(')', 1)[1].split()[19]}" for p in pids)
    script = (
        control_cmds.watch_activity_funcs() + f"\nknown={shlex.quote(known)}\nhubdir\n"
        f"i=0; while [ $i -lt {n} ]; do act > /dev/null; i=$((i+1)); done\ntimes"
    )
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout.split()
    total = sum(int(t.split("m")[0]) * 60 + float(t.split("m")[1].rstrip("s")) for t in out[-4:])
    return 1000 * total / n, len(pids)


def login_shell() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_shell


def rc_note() -> str:
    """Bash run by sshd reads ~/.bashrc: say so when it does something heavy here."""
    try:
        rc = Path("~/.bashrc").expanduser().read_text()
    except OSError:
        return ""
    heavy = [word for word in ("pyenv init", "conda", "nvm.sh") if word in rc]
    return f", whose ~/.bashrc runs {', '.join(heavy)}" if heavy and login_shell().endswith("bash") else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=15.0)
    args = ap.parse_args()
    w = args.seconds
    rows: list[list[str]] = []
    cpus: list[float] = []
    with loopback_sshd() as sshd, tempfile.TemporaryDirectory(prefix="bench-host-") as tmp:
        sim = sim_ready(Path(tmp))
        floor = asyncio.run(per_command(sshd))
        act_ms, act_procs = act_cost(sim)
        try:
            runs = [
                (f"sglang-tui (one SSH connection: tail -F, GPU probe every 1 s, /health every {READY_HEALTH_S:g} s at "
                 f"ready, process check every {SCAN_S:g} s on one long-lived loop)",
                 lambda: asyncio.run(sglang_tui(sshd, sim, w))),
                ("… of which without the process scan (tail, GPU probe, /health)",
                 lambda: asyncio.run(sglang_tui(sshd, sim, w, processes=False))),
                ("… the same with the process check but without the signals beyond the log (CPU, disk reads, "
                 "compilers, HF cache: issue 13)", lambda: asyncio.run(sglang_tui(sshd, sim, w, activity=False))),
                ("… of which tail -F + /health only", lambda: asyncio.run(sglang_tui(sshd, sim, w, gpus=False, processes=False))),
                ("`watch -n1 <GPU stand-in>` + `curl /health` loop every 1 s", lambda: watch_and_curl(sshd, sim, w)),
                ("`ssh host 'wc -l; tail -5; curl /v1/models'` every 1 s", lambda: ssh_per_check(sshd, sim, w)),
            ]  # fmt: skip
            for name, run in runs:
                cpu, detail = run()
                cpus.append(cpu)
                if len(cpus) == 2:  # the full Monitor minus the same without its process scan
                    rows[0][3] += f"; ≈ {1000 * (cpus[0] - cpus[1]) / (w / SCAN_S):.0f} ms of host CPU per process scan"
                rows.append([name, f"{cpu * 60 / w:.2f} s", f"{100 * cpu / w:.1f} %", detail])
        finally:
            sim.stop()
    table = md_table(["watcher", "host CPU per minute", "of one core", "what ran"], rows)
    notes = [
        f"measured over a {w:g} s window after {WARMUP_S:g} s of warm-up, scaled to a minute; the server is the "
        "simulator at ready with no traffic (its own CPU is not counted); host = this machine via a loopback sshd",
        "GPU stand-in: there is no GPU here, so `nvidia-smi` is replaced by a Python process per tick that imports "
        "pynvml and reads the simulator's GPU state; a real nvidia-smi spawn costs 25 ms–1.5 s, so this baseline is "
        "a LOWER bound. sglang-tui's probe is one long-lived process (NVML on a real host, the simulator's files here)",
        "a person polling by hand every few minutes pays the per-check figure once per check",
        f"every command run on a new SSH channel costs {1000 * floor:.0f} ms of host CPU here before it starts (sshd's "
        f"session and the user's login shell, {login_shell()}{rc_note()}); it is in the process scan's figure and in each "
        "per-check `ssh`",
        f"the activity block each check adds (issue 13: one awk over the server's own {act_procs} processes' /proc "
        f"stat, io and children; a `wc -c` only while HF `*.incomplete` blobs exist) costs {act_ms:.1f} ms of CPU, "
        f"{act_ms * 60 / SCAN_S / 1000:.2f} s per minute at a check every {SCAN_S:g} s",
        f"the process scan reads /proc of every process on the host ({sum(1 for p in os.listdir('/proc') if p.isdigit())} "
        "here; more on a busy GPU host), so its cost grows with the host's process count",
    ]
    print(
        section(
            "Cost on the GPU host: CPU while watching a ready server",
            table,
            notes,
            f".venv/bin/python bench/bench_host_cost.py --seconds {w:g}",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
