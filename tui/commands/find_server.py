"""`sglang-tui HOST` / `wait HOST` with neither --log nor --port: find the SGLang servers running on the host
(tui.sources.discover) and take the only one's port and log; with several, the caller asks (or exits 2)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from tui.core.discovery import DEFAULT_PORT, FoundServer, several_line
from tui.core.exitcodes import EXIT_BAD_ARGS
from tui.sources.discover import discover
from tui.sources.host import Host, HostError


def wants_discovery(args: argparse.Namespace) -> bool:
    """Set by cli.main: one HOST, no --log, no --port (nor one from the settings), no --launch."""
    return bool(getattr(args, "discover", False))


def adopt(args: argparse.Namespace, server: FoundServer) -> str:
    """Watch this server: its port, and its log when it has one. Returns the line that says so."""
    args.port = server.port
    args.log = server.log
    return f"found an SGLang server: {server.summary()}"


async def find(
    host: Host,
    args: argparse.Namespace,
    *,
    say: Callable[[str], None],
    choose: Callable[[list[FoundServer]], FoundServer | None] | None = None,
) -> int | None:
    """Resolve args.port/args.log from the servers on the host; None to go on, else an exit code (2: several
    and no choice made). `choose` picks one of several (the TUI's prompt); without it several is exit 2."""
    args.port = DEFAULT_PORT
    try:
        found = await discover(host)
    except (HostError, TimeoutError, OSError) as err:
        say(f"cannot look for SGLang servers ({err}): watching port {DEFAULT_PORT}")
        return None
    if not found:
        say(f"no SGLang server found running on {args.host}: watching port {DEFAULT_PORT} (give --port or --log)")
        return None
    if len(found) == 1:
        say(adopt(args, found[0]))
        return None
    picked = choose(found) if choose is not None else None
    if picked is None:
        say(several_line(found))
        return EXIT_BAD_ARGS
    say(adopt(args, picked))
    return None


def ask_on_terminal(found: list[FoundServer]) -> FoundServer | None:
    """Before the TUI starts: number the servers on stderr and read the choice from the terminal (None when
    stdin is no terminal, or on an empty or bad answer)."""
    if not sys.stdin.isatty():
        return None
    print(f"{len(found)} SGLang servers found:", file=sys.stderr)
    for i, server in enumerate(found, 1):
        print(f"  {i}. {server.summary()}", file=sys.stderr)
    try:
        answer = input(f"watch which one (1-{len(found)})? ").strip()
    except EOFError:
        return None
    if answer.isdigit() and 1 <= int(answer) <= len(found):
        return found[int(answer) - 1]
    return None
