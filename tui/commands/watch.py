"""`sglang-tui HOST …`: connect, then run the TUI over the Monitor's batches with ServerControl for the keys.

With `--launch CMD` (and not `--read-only`) the app launches the server when no process of it is found."""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from tui.core.benchstats import BenchResult
from tui.core.state import Readiness

if TYPE_CHECKING:
    from tui.sources.bench import BenchRunner
    from tui.sources.control import ServerControl
    from tui.sources.host import Host
    from tui.sources.monitor import Monitor
    from tui.ui.app import SglangTui


def run(args: argparse.Namespace) -> int:
    if len(getattr(args, "hosts", None) or ()) > 1 or getattr(args, "deployment", None):
        from tui.commands import watch_deployment  # several nodes, or PD members: the deployment's TUI

        return watch_deployment.run(args)
    return asyncio.run(watch(args))


async def watch(args: argparse.Namespace) -> int:
    """Exit 4 with one line when the host cannot be reached or refuses us; else run the app until `q`."""
    from tui.sources.connect import make_host
    from tui.sources.host import HostError

    try:
        host = make_host(args)
        await host.connect()
    except (HostError, OSError, ValueError) as err:
        print(f"sglang-tui: cannot connect to {args.host}: {err}", file=sys.stderr)
        return 4
    try:
        return await run_tui(host, args, host_label=args.host)
    finally:
        await host.close()


def _bench_runner(host: Host, port: int, log: str | None) -> BenchRunner:
    """A bench runner with the default plan (the `b` key), on the host the monitor watches."""
    from tui.sources.bench import BenchPlan, BenchRunner

    return BenchRunner(host, port, BenchPlan(), log_path=log)


def build_app(host: Host, args: argparse.Namespace, *, host_label: str, initial: Readiness | None = None,
              control: ServerControl | None = None) -> tuple[SglangTui, Monitor]:
    """The app and its Monitor for a connected host (one ServerControl serves the Monitor and the keys)."""
    from tui.core.readiness import reduce
    from tui.history.paths import history_path
    from tui.sources.weightfiles import WeightFilesProbe
    from tui.history.recorder import Recorder
    from tui.sources.control import ServerControl
    from tui.sources.monitor import Monitor
    from tui.ui.app import SglangTui, UiSources

    sim_gpus = getattr(args, "sim_gpus", None)
    if control is None:
        control = ServerControl(host, port=args.port, log_path=args.log, launch=getattr(args, "launch", None),
                                cwd=getattr(args, "cwd", None), remote_python=args.remote_python, sim_gpus=sim_gpus)
    from tui.sources.health import HealthPoller

    probe = not getattr(args, "no_health", False)
    monitor = Monitor(host, log_path=args.log, port=args.port, remote_python=args.remote_python, sim_gpus=sim_gpus,
                      control=control, health=HealthPoller(host, args.port, enabled=probe))
    start = initial if initial is not None else Readiness()
    start = replace(start, health_probed=probe, health_port=args.port, log_watched=bool(args.log), process_watched=True)
    stall_after = getattr(args, "stall_after", None)
    if stall_after is not None:
        start = replace(start, stall_after=stall_after)
    # `--launch` starts the server when none is found on the port (a running one is only watched; never read-only).
    sources = UiSources(batches=monitor.batches, control=None if args.read_only else control,
                        host_label=host_label, phase_changed=monitor.set_phase, port=args.port,
                        launch_if_absent=bool(getattr(args, "launch", None)) and not args.read_only,
                        dump=_dumper(host, control, args.remote_python, host_label),
                        bench=partial(_bench_runner, host, args.port, args.log))
    recorder = Recorder(history_path(args), host_label, "tui")
    weights = WeightFilesProbe(host)

    def hook(state: Readiness) -> Readiness:  # the weights' bytes on the host (one stat), then the history
        for found in weights.poll(state):
            state = reduce(state, found, state.updated_at)
        return recorder.update(state)

    sources.state_hook = hook

    def previous_bench() -> BenchResult | None:
        found = recorder.last_bench()
        return BenchResult.from_json(found) if found is not None else None

    sources.previous_bench = previous_bench
    sources.record_bench = lambda result: recorder.record_bench(result.to_json())
    app = SglangTui(sources, read_only=args.read_only, initial=start)
    app.history_recorder = recorder  # type: ignore[attr-defined]  # run_tui records an unfinished launch at quit
    return app, monitor


def _dumper(host: Host, control: ServerControl, remote_python: str, where: str):  # type: ignore[no-untyped-def]
    """The `d` key's intent: py-spy every process of the server, save it; (one line, saved path or None)."""
    from tui.commands.dump import dump_and_save

    async def dump() -> tuple[str, str | None]:
        result, path = await dump_and_save(host, control, remote_python=remote_python, where=where)
        line = result.error or (result.grouping.summary if result.grouping is not None else "nothing dumped")
        return line, str(path) if path is not None else None

    return dump


async def run_tui(host: Host, args: argparse.Namespace, *, host_label: str, initial: Readiness | None = None,
                  control: ServerControl | None = None) -> int:
    """Run the app until the user quits, then close the Monitor."""
    app, monitor = build_app(host, args, host_label=host_label, initial=initial, control=control)
    try:
        await app.run_async()
    finally:
        await monitor.close()
        recorder = getattr(app, "history_recorder", None)
        if recorder is not None:
            recorder.finish(getattr(app, "_live", None) or Readiness())
    return 0
