"""`sglang-tui HOST …`: connect, then run the TUI over a Session (the Monitor's batches folded), ServerControl for the keys.

With `--launch CMD` (and not `--read-only`) the app launches the server when no process of it is found."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from tui.commands.options import WatchOptions
from tui.core.benchstats import BenchResult
from tui.core.exitcodes import EXIT_CONNECT
from tui.core.state import Readiness

if TYPE_CHECKING:
    from textual.app import App

    from tui.sources.bench import BenchRunner
    from tui.sources.control import ServerControl
    from tui.sources.host import Host
    from tui.sources.procwatch import ProcessWatch
    from tui.sources.session import Session
    from tui.ui.app import SglangTui


def run(opts: WatchOptions) -> int:
    if opts.target.several or opts.target.slurm:
        from tui.commands import watch_deployment  # several nodes, PD members, a Slurm job: the deployment's TUI

        return watch_deployment.run(opts)
    return asyncio.run(watch(opts))


async def watch(opts: WatchOptions) -> int:
    """Exit 4 with one line when the host cannot be reached or refuses us; else run the app until `q`."""
    from dataclasses import replace

    from tui.sources.connect import make_host
    from tui.sources.host import HostError

    where = opts.target.host
    try:
        host = make_host(opts.target.spec())
        await host.connect()
    except (HostError, OSError, ValueError) as err:
        print(f"sglang-tui: cannot connect to {where}: {err}", file=sys.stderr)
        return EXIT_CONNECT
    try:
        if opts.target.discover:  # neither --port nor --log: find the server on the host
            from tui.commands.find_server import ask_on_terminal, find

            found = await find(host, opts.server, where, say=lambda line: print(f"sglang-tui: {line}", file=sys.stderr),
                               choose=ask_on_terminal)  # fmt: skip
            if isinstance(found, int):
                return found
            opts = replace(opts, server=found)
        return await run_tui(host, opts, host_label=where)
    finally:
        await host.close()


def _bench_runner(host: Host, port: int, log: str | None) -> BenchRunner:
    """A bench runner with the default plan (the `b` key), on the host the monitor watches."""
    from tui.sources.bench import BenchPlan, BenchRunner

    return BenchRunner(host, port, BenchPlan(), log_path=log)


def build_app(
    host: Host,
    opts: WatchOptions,
    *,
    host_label: str,
    initial: Readiness | None = None,
    control: ServerControl | None = None,
) -> tuple[SglangTui, Session]:
    """The app and its Session for a connected host. One process watch serves the Monitor and the keys: a
    ServerControl, or under --read-only a ProcessWatch alone (nothing that can signal a process is built)."""
    from tui.commands.settings import save_theme
    from tui.commands.wait import tui_hook
    from tui.history.recorder import Recorder
    from tui.sources.control import ServerControl, process_watch
    from tui.sources.session import Session, weights_step
    from tui.sources.weightfiles import WeightFilesProbe
    from tui.ui.actions import DEMO_QUIT_WORDS, QUIT_WORDS
    from tui.ui.app import READY_CLOCK_TICKS, SglangTui, UiSources

    config = opts.server
    watch = process_watch(host, config, control)
    start = config.first_state(initial)
    recorder = Recorder(opts.history, host_label, "tui", port=config.port, log=config.log or "")
    steps = (weights_step(WeightFilesProbe(host)), recorder.step)  # the weights' bytes on the host, then the history
    # the app ticks itself: a Tick through the Monitor's queue too would fold every second twice
    session = Session.open(host, config, process_watch=watch, initial=start, steps=steps, ticks=False)
    controller = watch if isinstance(watch, ServerControl) else None
    # `--launch` starts the server when none is found on the port (a running one is only watched; never read-only).
    sources = UiSources(
        batches=session.batches,
        control=controller,
        host_label=host_label,
        fold=session.fold,
        port=config.port,
        launch_if_absent=bool(config.launch) and controller is not None,
        dump=_dumper(host, watch, config.remote_python, host_label),
        bench=partial(_bench_runner, host, config.port, config.log),
        verdict_hook=tui_hook(opts.hooks, opts.target.host, config.port),
        quit_words=DEMO_QUIT_WORDS if opts.demo else QUIT_WORDS,
    )

    def previous_bench() -> BenchResult | None:
        found = recorder.last_bench()
        try:
            return BenchResult.from_json(found) if found is not None else None
        except ValueError as odd:  # a stored result that is no bench's: compared with nothing
            recorder.tell(f"history: the last bench is unreadable ({odd}); compared with nothing")
            return None

    sources.previous_bench = previous_bench
    sources.record_bench = lambda result: recorder.record_bench(result.to_json())
    app = SglangTui(
        sources,
        read_only=config.read_only,
        initial=start,
        ready_clock_ticks=READY_CLOCK_TICKS,
        keymap=dict(opts.settings.keys),
        theme=opts.settings.theme,
        keep_theme=save_theme,
    )
    app.history_recorder = recorder  # type: ignore[attr-defined]  # run_tui records an unfinished launch at quit
    return app, session


def _dumper(
    host: Host, watch: ProcessWatch, remote_python: str, where: str
) -> Callable[[], Awaitable[tuple[str, str | None]]]:
    """The `d` key's intent: py-spy every process of the server, save it; (one line, saved path or None)."""
    from tui.commands.dump import dump_and_save

    async def dump() -> tuple[str, str | None]:
        result, path = await dump_and_save(host, watch, remote_python=remote_python, where=where)
        line = result.error or (result.grouping.summary if result.grouping is not None else "nothing dumped")
        return line, str(path) if path is not None else None

    return dump


async def run_tui(
    host: Host,
    opts: WatchOptions,
    *,
    host_label: str,
    initial: Readiness | None = None,
    control: ServerControl | None = None,
) -> int:
    """Run the app until the user quits or a SIGHUP/SIGTERM/SIGINT comes (the terminal closed, a kill, ctrl+c from
    outside), then close the Monitor; a signal exits 128+signal, after the caller's cleanup (`finally`) has run."""
    app, session = build_app(host, opts, host_label=host_label, initial=initial, control=control)
    try:
        return await run_app(app)
    finally:
        await session.close()
        recorder = getattr(app, "history_recorder", None)
        if recorder is not None:
            recorder.finish(getattr(app, "_live", None) or Readiness())


async def run_app(app: App[Any]) -> int:
    """Run a Textual app until the user quits or a SIGHUP/SIGTERM/SIGINT comes: 0, or 128+signal (the caller's
    cleanup runs after either; the fleet board runs through here too)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    caught: list[int] = []
    timers: list[asyncio.TimerHandle] = []

    def on_signal(signum: int) -> None:
        if caught:
            return
        caught.append(signum)
        app.exit()
        if task is not None:  # a terminal that is gone can block the app's way out: do not wait for ever
            timers.append(loop.call_later(EXIT_GRACE_S, task.cancel))

    installed = []
    for signum in EXIT_SIGNALS:
        try:
            loop.add_signal_handler(signum, on_signal, signum)
            installed.append(signum)
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no such signal here
            pass
    try:
        try:
            await app.run_async()
        except asyncio.CancelledError:
            if not caught:
                raise
    finally:
        for timer in timers:  # the app left in time: the cleanup after it must not be cancelled
            timer.cancel()
        for signum in installed:
            loop.remove_signal_handler(signum)
    return 128 + caught[0] if caught else 0


EXIT_SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
EXIT_GRACE_S = 3.0  # after a signal, the app gets this long to leave before its task is cancelled
