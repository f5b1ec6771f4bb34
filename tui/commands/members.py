"""The preamble every deployment command shares: read the members, connect one host each, say what failed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from tui.core.config import Target, WatchConfig
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_CONNECT, EXIT_TIMEOUT
from tui.sources.bounded import within
from tui.sources.connect import make_host
from tui.sources.deployment import MemberSpec, connect_members, node_specs
from tui.sources.host import Host


def member_specs(target: Target, server: WatchConfig) -> list[MemberSpec]:
    """The members named on the command line or in --deployment; ValueError with one line for bad input."""
    if target.deployment:
        from tui.commands.deployment_file import load

        return load(target.deployment, sim_gpus=server.sim_gpus)
    return node_specs(list(target.hosts), log=server.log, port=server.port, sim_gpus=server.sim_gpus)


async def connect_all(
    target: Target, server: WatchConfig, say: Callable[[str], None], *, timeout: float | None = None
) -> tuple[list[MemberSpec], list[Host]] | int:
    """The members and their connected hosts (close them with close_all), or the exit code after one line
    said: 2 for a bad member list or deployment file, 7 for no connection within `timeout`, 4 when a member's
    host cannot be reached."""
    try:
        specs = member_specs(target, server)
    except ValueError as err:
        say(str(err))
        return EXIT_BAD_ARGS
    hosts = [make_host(target.spec(spec.host)) for spec in specs]
    try:
        problem = await within(connect_members(specs, hosts), timeout)
    except asyncio.TimeoutError:
        say("timed out connecting to " + ", ".join(s.host for s in specs))
        await close_all(hosts)
        return EXIT_TIMEOUT
    except BaseException:  # not a connection problem (a bug, a cancel): the hosts are closed all the same
        await close_all(hosts)
        raise
    if problem is not None:
        say(problem)
        await close_all(hosts)
        return EXIT_CONNECT
    return specs, hosts


async def with_members(
    target: Target,
    server: WatchConfig,
    say: Callable[[str], None],
    body: Callable[[list[MemberSpec], list[Host]], Awaitable[int]],
    *,
    timeout: float | None = None,
) -> int:
    """Connect every member (connect_all), run `body` on them and close their hosts; its exit code, or
    connect_all's when they could not be read or reached."""
    found = await connect_all(target, server, say, timeout=timeout)
    if isinstance(found, int):
        return found
    specs, hosts = found
    try:
        return await body(specs, hosts)
    finally:
        await close_all(hosts)


async def close_all(hosts: list[Host]) -> None:
    await asyncio.gather(*(h.close() for h in hosts), return_exceptions=True)
