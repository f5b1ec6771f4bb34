"""What the commands print goes through `tui.core.termtext.terminal_safe` on its way to the terminal.

Every line a command prints can hold text from the host or the user: a discovered log's file name, a symlink's
target, a typed path or host name echoed back, a process title, a frame of a dump. Wrapping stdout and stderr
once, for the whole run, covers every print, argparse's usage and a traceback, including the ones written
later. Textual draws the TUI on sys.__stderr__, which is not wrapped (its panes sanitise what they show).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from tui.core.termtext import terminal_safe


class SafeStream:
    """A text stream that writes terminal_safe(text) to the one it wraps; everything else is the wrapped one's."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(terminal_safe(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextmanager
def safe_output() -> Iterator[None]:
    """sys.stdout and sys.stderr wrapped in SafeStream while the block runs (once: nested blocks add nothing)."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, SafeStream):
        sys.stdout = SafeStream(sys.stdout)
    if not isinstance(sys.stderr, SafeStream):
        sys.stderr = SafeStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
