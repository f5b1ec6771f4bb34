"""STUB (being written): the SGLang log parser, bytes in, events out."""

from __future__ import annotations

from tui.core.events import Event


class LogParser:
    """Streaming parser: feed chunks of bytes (cut anywhere), get events; flush() at end of input."""

    def feed(self, data: bytes) -> list[Event]:
        return []

    def flush(self) -> list[Event]:
        return []
