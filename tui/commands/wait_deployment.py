"""`sglang-tui wait HOST0 HOST1 …` and `wait --deployment FILE`: wait for a whole deployment.

Each member's events fold into that member's own `Readiness` (the single-server reducer); the deployment
model (tui/core/deployment.py) derives the one state whose phase, stall and error decide the verdict, waited
on by the same loop as `wait HOST` (tui/sources/waiting.py), with the same exit codes (tui/core/exitcodes.py).
With --json every change is one line carrying the `replay --json` keys plus "members".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial
from typing import Protocol

from tui.commands.members import with_members
from tui.commands.options import WaitOptions
from tui.core import wording
from tui.core.control import ProcessWatchLike
from tui.core.exitcodes import EXIT_TIMEOUT
from tui.core.state import Readiness
from tui.sources.deployment import MemberSpec
from tui.sources.deployment_session import DeploymentSession, deployment_monitor, deployment_of
from tui.sources.host import Host
from tui.sources.waiting import wait_for


class Reporting(Protocol):
    """`wait`'s reporter (tui/commands/wait.Reporter), as a deployment's wait uses it."""

    def update(self, state: Readiness, elapsed: float) -> None: ...

    def emit_json(self, state: Readiness, *, force: bool) -> None: ...

    def say(self, line: str) -> None: ...


async def wait_members(
    opts: WaitOptions,
    reporter: Reporting,
    started: float,
    specs: list[MemberSpec],
    hosts: list[Host],
    process_watch: Callable[[MemberSpec, Host], ProcessWatchLike] | None = None,
) -> int:
    """Watch the connected members until the deployment's verdict (or --timeout, counted from `started`)."""
    monitor = deployment_monitor(specs, hosts, opts.server.remote_python, process_watch)
    session = DeploymentSession(monitor, deployment_of(specs, opts.server.stall_after))
    remaining = None if opts.timeout is None else max(0.0, opts.timeout - (time.monotonic() - started))
    found, state = await wait_for(
        session,
        reporter.update,
        timeout=remaining,
        say=lambda line: reporter.say(f"sglang-tui wait: {line}"),
        budget=opts.timeout,
    )
    if opts.json:
        reporter.emit_json(state, force=True)
    reporter.say(f"sglang-tui wait: {wording.line(found, state, state.updated_at)}")
    return found.code if found.code is not None else EXIT_TIMEOUT


async def _main(opts: WaitOptions, reporter: Reporting) -> int:
    started = time.monotonic()
    return await with_members(
        opts.target,
        opts.server,
        lambda line: reporter.say(f"sglang-tui wait: {line}"),
        partial(wait_members, opts, reporter, started),
        timeout=opts.timeout,
    )


def run(opts: WaitOptions, reporter: Reporting) -> int:
    return asyncio.run(_main(opts, reporter))
