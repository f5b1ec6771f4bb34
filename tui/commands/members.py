"""The preamble every deployment command shares: read the members, connect one host each, say what failed."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable

from tui.commands.wait_deployment import make_member_host, specs_from_args
from tui.sources.deployment import MemberSpec, connect_members
from tui.sources.host import Host

EXIT_BAD_INPUT, EXIT_CONNECT = 2, 4


async def connect_all(
    args: argparse.Namespace, say: Callable[[str], None]
) -> tuple[list[MemberSpec], list[Host]] | int:
    """The members and their connected hosts (close them with close_all), or the exit code after one line
    said: 2 for a bad member list or deployment file, 4 when a member's host cannot be reached."""
    try:
        specs = specs_from_args(args)
    except ValueError as err:
        say(str(err))
        return EXIT_BAD_INPUT
    hosts = [make_member_host(args, spec.host) for spec in specs]
    try:
        problem = await connect_members(specs, hosts)
    except BaseException:  # not a connection problem (a bug, a cancel): the hosts are closed all the same
        await close_all(hosts)
        raise
    if problem is not None:
        say(problem)
        await close_all(hosts)
        return EXIT_CONNECT
    return specs, hosts


async def close_all(hosts: list[Host]) -> None:
    await asyncio.gather(*(h.close() for h in hosts), return_exceptions=True)
