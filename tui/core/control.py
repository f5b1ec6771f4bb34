"""What a consumer needs from the server's control (tui.sources.control.ServerControl), as a Protocol.

The TUI (tui.ui.app) and the Monitor (tui.sources.monitor) both type their control collaborator with it, so a
fake in a test and the real ServerControl are held to the same methods. Pure: typing only.
"""

from __future__ import annotations

from typing import Protocol

from tui.core.events import ControlResult, ServerProcess


class ServerControlLike(Protocol):
    """The server's processes: what they are (process_state), and what may be done to them."""

    def describe(self, action: str) -> str: ...

    async def process_state(self) -> ServerProcess: ...

    async def launch(self) -> ControlResult: ...

    async def restart(self) -> ControlResult: ...

    async def terminate(self) -> ControlResult: ...

    async def kill(self) -> ControlResult: ...
