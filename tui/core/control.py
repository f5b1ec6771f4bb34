"""What a consumer needs from the server's process watch and control (tui.sources.procwatch, control), as Protocols.

The Monitor (tui.sources.monitor) types its process watch with ProcessWatchLike and the TUI (tui.ui.app) its control
with ServerControlLike, so a fake in a test and the real classes are held to the same methods. Pure: typing only.
"""

from __future__ import annotations

from typing import Protocol

from tui.core.events import ControlResult, ServerProcess


class ProcessWatchLike(Protocol):
    """The server's processes, read only: what they are (tui.sources.procwatch.ProcessWatch)."""

    async def process_state(self) -> ServerProcess: ...


class ServerControlLike(ProcessWatchLike, Protocol):
    """The server's processes: what they are (process_state), and what may be done to them."""

    @property
    def relaunch(self) -> str | None:
        """The command a restart starts the server with (--launch CMD), None where it cannot start one."""
        ...

    def describe(self, action: str, launch: str | None = None) -> str:
        """The exact commands `action` runs on the host; `launch`: the command a restart would start instead."""
        ...

    def relaunch_with(self, command: str) -> None:
        """From now on start the server with `command` (a remedy's edited --launch CMD, confirmed by the user)."""
        ...

    async def launch(self) -> ControlResult: ...

    async def restart(self) -> ControlResult: ...

    async def terminate(self) -> ControlResult: ...

    async def kill(self) -> ControlResult: ...
