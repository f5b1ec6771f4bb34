"""`sglang-tui demo`: launch the simulated 8-GPU server through ServerControl and watch it with the real TUI."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import tui

STOP_GRACE_S = 5.0  # the simulator drains at once; a real server would get ServerControl's default


def free_port() -> int:
    """A TCP port nothing listens on now (the simulator binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def simulate_command(*, log: Path, port: int, gpu_dir: Path, speed: float, fault: str | None) -> str:
    """The `--launch` command line that starts the simulator (every word quoted)."""
    words = [sys.executable, "-m", "tui", "simulate", "--log", str(log), "--port", str(port),
             "--gpu-state", str(gpu_dir), "--speed", f"{speed:g}"]
    if fault:
        words += ["--fault", fault]
    return " ".join(shlex.quote(w) for w in words)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(demo(args))


async def demo(args: argparse.Namespace) -> int:
    from tui.commands.watch import run_tui
    from tui.core.readiness import reduce
    from tui.core.state import Readiness
    from tui.sources.control import ServerControl
    from tui.sources.local import LocalHost
    from tui.ui.labels import control_summary

    if args.speed <= 0:
        print("sglang-tui demo: --speed must be above 0 (10 plays a 10-minute startup in a minute)", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="sglang-tui-demo-"))
    log, gpu_dir, port = workdir / "server.log", workdir / "gpus", free_port()
    launch = simulate_command(log=log, port=port, gpu_dir=gpu_dir, speed=args.speed, fault=args.fault)
    project_root = str(Path(tui.__file__).resolve().parent.parent)  # so `-m tui` imports this tree
    host = LocalHost()
    await host.connect()
    control = ServerControl(host, port=port, log_path=str(log), launch=launch, cwd=project_root,
                            remote_python=sys.executable, sim_gpus=str(gpu_dir), grace_s=STOP_GRACE_S)
    try:
        launched = await control.launch()
        if not launched.ok:
            print(f"sglang-tui demo: the simulator did not start: {launched.detail or launched.command}", file=sys.stderr)
            return 1
        watch_args = argparse.Namespace(log=str(log), port=port, remote_python=sys.executable, sim_gpus=str(gpu_dir),
                                        read_only=args.read_only, launch=launch, cwd=project_root, stall_after=None)
        initial = reduce(Readiness(), launched, time.time())
        return await run_tui(host, watch_args, host_label=f"local demo :{port}", initial=initial, control=control)
    finally:
        stopped = await control.terminate()  # nothing of the demo server may outlive the demo
        stopped_clean = stopped.ok and not stopped.survivors and not stopped.gpu_held
        print(f"sglang-tui demo: simulated server {control_summary(stopped)}", file=sys.stderr)
        await host.close()
        if stopped_clean:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"sglang-tui demo: its log and GPU state are kept in {workdir}", file=sys.stderr)
