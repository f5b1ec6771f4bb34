"""`sglang-tui HOST` / `wait HOST` with neither --log nor --port: find the SGLang servers running on the host
(tui.sources.discover) and take the only one's port and log; with several, the caller asks (or exits 2)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace

from tui.core.config import WatchConfig
from tui.core.discovery import DEFAULT_PORT, FoundServer, several_line
from tui.core.exitcodes import EXIT_BAD_ARGS
from tui.sources.discover import discover
from tui.sources.host import Host, HostError


def adopt(config: WatchConfig, server: FoundServer) -> tuple[WatchConfig, str]:
    """Watch this server: its port, and its log when it has one; and the line that says so."""
    return replace(config, port=server.port, log=server.log), f"found an SGLang server: {server.summary()}"


async def find(
    host: Host,
    config: WatchConfig,
    where: str,
    *,
    say: Callable[[str], None],
    choose: Callable[[list[FoundServer]], FoundServer | None] | None = None,
) -> WatchConfig | int:
    """The options with the port and log of the server running on the host (`where` names it), else with the
    default port; an exit code (EXIT_BAD_ARGS: several, and no choice made) to stop. `choose` picks one of several (the
    TUI's prompt); without it several is exit 2."""
    config = replace(config, port=DEFAULT_PORT)
    try:
        found = await discover(host)
    except (HostError, TimeoutError, OSError) as err:
        say(f"cannot look for SGLang servers ({err}): watching port {DEFAULT_PORT}")
        return config
    if not found:
        say(f"no SGLang server found running on {where}: watching port {DEFAULT_PORT} (give --port or --log)")
        return config
    picked = found[0] if len(found) == 1 else choose(found) if choose is not None else None
    if picked is None:
        say(several_line(found))
        return EXIT_BAD_ARGS
    config, line = adopt(config, picked)
    say(line)
    return config


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
