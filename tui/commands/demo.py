"""`sglang-tui demo`: launch the simulated 8-GPU server through ServerControl and watch it with the real TUI."""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tui.commands.demo_launch import DEMO_TRAFFIC as DEMO_TRAFFIC  # the demo's names, as tests import them
from tui.commands.demo_launch import PROJECT_ROOT, free_port, simulate_command
from tui.commands.demo_launch import SIM_STALL_S as SIM_STALL_S
from tui.commands.demo_launch import demo_stall_after as demo_stall_after
from tui.commands.options import DemoOptions, WatchOptions
from tui.core.config import Target, WatchConfig
from tui.core.events import ControlResult
from tui.core.exitcodes import EXIT_FAILED
from tui.core.past import OddRow
from tui.core.settings import Settings
from tui.history.paths import default_path
from tui.history.store import HistoryError, HistoryStore
from tui.sources.control import ServerControl
from tui.sources.local import LocalHost

STOP_GRACE_S = 5.0  # the simulator drains at once; a real server gets ServerControl's default
#: The demo records its launches in a history of its own, next to the real one and never in it, under one host
#: name (its port changes every run): the second run shows "ready in ~…" from the first.
DEMO_HISTORY = "demo-history.sqlite3"
DEMO_HOST = "local demo"
#: Every third launch of the demo loads its weights this much slower, so that a regression against the earlier
#: launches shows (the history flags a phase past 1.5× its median once two launches had it); every launch also
#: varies by a few percent per phase (the simulator's seeded jitter).
SLOW_EVERY = 3
SLOW_WEIGHTS = 1.8


def demo_history_path() -> Path:
    """The demo's own history file: beside the real history (--history's default), never that file itself."""
    return default_path().with_name(DEMO_HISTORY)


def ready_launches(path: Path) -> int:
    """How many of the demo's launches reached ready (0 when its history is absent or cannot be read)."""
    if not path.exists():
        return 0
    try:
        with HistoryStore(path) as store:
            return sum(1 for launch in store.launches(DEMO_HOST, limit=10_000) if launch["outcome"] == "ready")
    except (HistoryError, OddRow, OSError):
        return 0


def launch_variation(number: int, fault: str | None) -> list[str]:
    """The simulator options of the demo's launch `number` (1 for the first): its own jitter, and slower weights
    every SLOW_EVERY-th launch (not while a fault is shown)."""
    options = ["--seed", str(number)]
    if fault is None and number % SLOW_EVERY == 0:
        options += ["--slow", f"weights={SLOW_WEIGHTS:g}"]
    return options


class DemoError(Exception):
    """The demo could not start; str() is one line."""


@dataclass
class Demo:
    """A running simulated server on this machine and what watches it."""

    workdir: Path
    log: Path
    gpu_dir: Path
    port: int
    launch: str
    host: LocalHost
    control: ServerControl
    launched: ControlResult

    def watch_options(
        self, read_only: bool, stall_after: float | None = None, settings: Settings | None = None
    ) -> WatchOptions:
        """The options `sglang-tui local …` would take to watch it, with the demo's own history."""
        server = WatchConfig(
            port=self.port,
            log=str(self.log),
            remote_python=sys.executable,
            sim_gpus=str(self.gpu_dir),
            launch=self.launch,
            cwd=PROJECT_ROOT,
            read_only=read_only,
            stall_after=stall_after,
        )
        return WatchOptions(
            Target(("local",)), server, history=demo_history_path(), settings=settings or Settings(), demo=True
        )


async def start_demo(speed: float, fault: str | None, accept_len: str | None = None) -> Demo:
    """Launch the simulator in a fresh temp dir on a free port, the way `--launch` launches a real server."""
    workdir = Path(tempfile.mkdtemp(prefix="sglang-tui-demo-"))
    log, gpu_dir, port = workdir / "server.log", workdir / "gpus", free_port()
    variation = launch_variation(ready_launches(demo_history_path()) + 1, fault)
    launch = simulate_command(
        log=log, port=port, gpu_dir=gpu_dir, speed=speed, fault=fault, accept_len=accept_len, variation=variation
    )
    host = LocalHost()
    await host.connect()
    control = ServerControl(
        host,
        port=port,
        log_path=str(log),
        launch=launch,
        cwd=PROJECT_ROOT,
        remote_python=sys.executable,
        sim_gpus=str(gpu_dir),
        grace_s=STOP_GRACE_S,
    )
    launched = await control.launch()
    if not launched.ok:
        await host.close()
        raise DemoError(f"the simulator did not start: {launched.detail or launched.command}")
    return Demo(workdir, log, gpu_dir, port, launch, host, control, launched)


async def stop_demo(demo: Demo) -> ControlResult:
    """Stop whatever is left of the simulated server, close the host, and remove the temp dir if all is gone."""
    stopped = await demo.control.terminate()
    await demo.host.close()
    if stopped.ok and not stopped.survivors and not stopped.gpu_held:
        shutil.rmtree(demo.workdir, ignore_errors=True)
    return stopped


def run(opts: DemoOptions) -> int:
    if opts.fleet:
        from tui.commands.demo_fleet import demo_fleet

        return asyncio.run(demo_fleet(opts))
    return asyncio.run(demo(opts))


async def demo(opts: DemoOptions) -> int:
    from tui.commands.watch import run_tui
    from tui.core.readiness import reduce
    from tui.core.state import Readiness
    from tui.ui.labels import control_summary

    try:
        running = await start_demo(opts.speed, opts.fault, opts.accept_len)
    except DemoError as err:
        print(f"sglang-tui demo: {err}", file=sys.stderr)
        return EXIT_FAILED
    try:
        initial = reduce(Readiness(), running.launched, time.time())
        watching = running.watch_options(opts.read_only, demo_stall_after(opts.speed, opts.stall_after), opts.settings)
        return await run_tui(running.host, watching, host_label=DEMO_HOST, initial=initial, control=running.control)
    finally:
        # nothing of the demo server may outlive the demo: q, ctrl+q, and SIGHUP (the terminal closed), SIGTERM and
        # SIGINT all come here (run_tui turns the signals into a clean exit); shielded so a second signal cannot cut it
        stopped = await asyncio.shield(stop_demo(running))
        _say(f"sglang-tui demo: {exit_words(stopped, control_summary)}")
        if running.workdir.exists():
            _say(f"sglang-tui demo: its log and GPU state are kept in {running.workdir}")
        _say(f"sglang-tui demo: its launches are kept in {demo_history_path()} (the next run's ETA rests on them)")


def exit_words(stopped: ControlResult, summary: Callable[[ControlResult], str]) -> str:
    """The demo's last word on its simulated server: stopped now, or already gone (a kill or a crash in the demo)."""
    if stopped.ok and stopped.found == "nothing":
        return "the simulated server had already stopped (nothing left of it to stop)"
    return f"simulated server {summary(stopped)}"


def _say(line: str) -> None:
    """A line on stderr; a terminal that was closed (SIGHUP) is no reason to fail the cleanup."""
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass
