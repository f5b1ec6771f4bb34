"""`sglang-tui wait HOST`: fold the monitor's events into the readiness model until ready, failed or stalled.

Exit 0 ready, 1 failed, 2 timed out, 3 stalled, 4 cannot connect/auth. Progress goes to stderr when it
changes; with --json every state change is one JSON line on stdout (the `replay --json` keys), the last
line being the final state.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable, TextIO

from tui.core import fmt
from tui.core.readiness import reduce
from tui.core.report import to_json
from tui.core.state import Phase, Readiness
from tui.sources.connect import make_host
from tui.sources.host import HostError
from tui.sources.monitor import Monitor

EXIT_READY, EXIT_FAILED, EXIT_TIMEOUT, EXIT_STALLED, EXIT_CONNECT = 0, 1, 2, 3, 4
HEARTBEAT_S = 15.0  # repeat an unchanged progress line this often, so a long quiet phase still shows life
COUNT_EVERY_S = 1.0  # a moving bar alone (same phase) prints at most this often


@dataclass
class Verdict:
    code: int
    line: str


def verdict(state: Readiness) -> Verdict | None:
    """The exit this state calls for, or None to keep waiting."""
    if state.phase in (Phase.READY, Phase.SERVING):
        return Verdict(EXIT_READY, state.reason if state.reason.startswith("ready") else f"ready: {state.reason}")
    if state.phase is Phase.FAILED:
        if state.error is not None:
            return Verdict(EXIT_FAILED, f"failed ({state.error.kind}): {state.error.line.strip()}")
        return Verdict(EXIT_FAILED, f"failed: {state.reason}")
    if state.connection == "failed":
        return Verdict(EXIT_CONNECT, f"cannot connect: {state.connection_detail}")
    if state.stall is not None:
        return Verdict(EXIT_STALLED, f"stalled in {state.phase.value}: {state.stall.detail or state.reason}")
    return None


def progress_line(state: Readiness, elapsed: float) -> str:
    parts = [state.phase.value]
    if state.shards is not None and state.phase is Phase.LOADING_WEIGHTS:
        bar = state.shards
        parts.append(f"shards {bar.done}/{bar.total}, {fmt.rate(bar.rate_per_s)}, {fmt.eta(bar.eta_s)}")
    if state.capture is not None and state.phase is Phase.CUDA_GRAPH:
        parts.append(f"capture {state.capture.done}/{state.capture.total}")
    if state.connection != "connected":
        parts.append(f"link {state.connection}")
    parts.append(state.reason)
    return f"[{fmt.duration(elapsed):>6}] " + " · ".join(parts)


class Reporter:
    """Writes progress to stderr when it changes and JSON lines to stdout when the state's report changes."""

    def __init__(self, json_out: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        self.json_out = json_out
        self.out = out
        self.err = err
        self._last_key: object = None
        self._last_counts: object = None
        self._last_line = ""
        self._last_at = 0.0
        self._last_json: str | None = None

    def update(self, state: Readiness, elapsed: float) -> None:
        key = (state.phase, state.error, state.stall is not None, state.connection, state.health_ready, state.log_ready)
        counts = (state.shards.done if state.shards else None, state.capture.done if state.capture else None)
        line = progress_line(state, elapsed)
        since = elapsed - self._last_at
        if (
            key != self._last_key
            or (counts != self._last_counts and since >= COUNT_EVERY_S)
            or (since >= HEARTBEAT_S and line != self._last_line)
        ):
            self._write(self.err, line)
            self._last_key, self._last_counts, self._last_line, self._last_at = key, counts, line, elapsed
        if self.json_out:
            self.emit_json(state, force=False)

    def emit_json(self, state: Readiness, *, force: bool) -> None:
        text = json.dumps(to_json(state), ensure_ascii=False)
        if text != self._last_json or (force and self._last_json is None):
            self._write(self.out, text)
            self._last_json = text

    def say(self, line: str) -> None:
        self._write(self.err, line)

    @staticmethod
    def _write(stream: TextIO, line: str) -> None:
        try:
            stream.write(line + "\n")
            stream.flush()
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


async def wait_for(
    monitor: Monitor, reporter: Reporter, *, stall_after: float | None, timeout: float | None,
    clock: Callable[[], float] = time.time,
) -> tuple[Verdict, Readiness]:  # fmt: skip
    """Fold batches until a verdict; a timeout gives EXIT_TIMEOUT."""
    start = clock()
    state = Readiness(stall_after=stall_after)

    async def fold() -> Verdict | None:
        nonlocal state
        async for batch in monitor.batches():
            now = clock()
            for event in batch:
                state = reduce(state, event, now)
            monitor.set_phase(state.phase)
            reporter.update(state, now - start)
            found = verdict(state)
            if found is not None:
                return found
        return None

    try:  # asyncio.wait_for, not asyncio.timeout: the project runs on Python 3.10
        found = await asyncio.wait_for(fold(), timeout)
        if found is not None:
            return found, state
    except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
        pass
    finally:
        await monitor.close()
    return Verdict(EXIT_TIMEOUT, f"timed out after {fmt.duration(timeout)} in {state.phase.value}: {state.reason}"), state


async def _main(args: argparse.Namespace) -> int:
    reporter = Reporter(bool(args.json))
    host = make_host(args)
    started = time.monotonic()
    try:
        try:
            await asyncio.wait_for(host.connect(), args.timeout)
        except HostError as exc:
            reporter.say(f"sglang-tui wait: cannot connect to {args.host}: {exc}")
            return EXIT_CONNECT
        except asyncio.TimeoutError:
            reporter.say(f"sglang-tui wait: timed out connecting to {args.host}")
            return EXIT_TIMEOUT
        monitor = Monitor(
            host, log_path=args.log, port=args.port, remote_python=args.remote_python, sim_gpus=args.sim_gpus
        )
        remaining = None if args.timeout is None else max(0.0, args.timeout - (time.monotonic() - started))
        found, state = await wait_for(monitor, reporter, stall_after=args.stall_after, timeout=remaining)
        if args.json:
            reporter.emit_json(state, force=True)
        reporter.say(f"sglang-tui wait: {found.line}")
        return found.code
    finally:
        await host.close()


def run(args: argparse.Namespace) -> int:
    if args.timeout is not None and args.timeout <= 0:
        print("sglang-tui wait: --timeout must be a positive number of seconds", file=sys.stderr)
        return EXIT_TIMEOUT
    if args.port is not None and not 0 < args.port < 65536:
        print(f"sglang-tui wait: --port {args.port} is not a TCP port (1-65535)", file=sys.stderr)
        return 2
    if len(getattr(args, "hosts", None) or ()) > 1 or getattr(args, "deployment", None):
        from tui.commands import wait_deployment  # several nodes, or PD members: the deployment model

        return wait_deployment.run(args)
    return asyncio.run(_main(args))
