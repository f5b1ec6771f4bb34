"""The terminal driver on Linux/macOS: Textual's, with an input thread that sleeps until there is something to do.

Textual's LinuxDriver (8.2.8, pinned) waits for keys with select(0.1): ten wake-ups a second, each taking the GIL
from the app, only to notice the end of input and to time out a lone ESC. Here the thread waits for a key, for a
byte on a wake pipe (written when input ends) or, while the key parser holds a partial sequence (a lone ESC), for
just as long as the parser's own timeout. Keys, ESC and quitting behave as before; an idle TUI's input thread
costs nothing.
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder
from threading import Event
from typing import Any

from textual._loop import loop_last
from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver


class _WakingEvent(Event):
    """The driver's exit event: setting it also writes to a pipe, so a select() on that pipe returns at once."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd = wake_fd

    def set(self) -> None:
        super().set()
        if self._wake_fd < 0:
            return  # the driver closed the pipe (its number may already be another file's)
        try:
            os.write(self._wake_fd, b".")
        except OSError:  # full: a wake-up is already pending
            pass

    def detach(self) -> None:
        self._wake_fd = -1


class QuietLinuxDriver(LinuxDriver):
    """LinuxDriver whose input thread waits without a polling timeout."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self.exit_event: _WakingEvent = _WakingEvent(self._wake_write)

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_read, 512):
                pass
        except OSError:  # empty (EAGAIN): drained
            pass

    def run_input_thread(self) -> None:
        """As LinuxDriver.run_input_thread, with the wait described above."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(self._wake_read, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode

        def process(ready: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
            for last, (key, mask) in loop_last(ready):
                if key.fd == self._wake_read:
                    self._drain_wake()
                    continue
                if mask & selectors.EVENT_READ:
                    data = decode(os.read(self.fileno, 1024 * 4), final=final and last)
                    if not data:  # stdin piped and at its end
                        break
                    for event in parser.feed(data):
                        self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        def wait_s() -> float | None:
            """None (until woken) unless the parser waits out a partial sequence: then until its timeout."""
            due = parser._timeout_time  # Textual's Parser: set while a lone ESC (or a split sequence) is pending
            return None if due is None else max(0.0, due - get_time())

        try:
            while not self.exit_event.is_set():
                process(selector.select(wait_s()))
            selector.unregister(self.fileno)
            process(selector.select(0.1), final=True)
        finally:
            selector.close()
            try:
                for _ in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass

    def close(self) -> None:
        super().close()
        self.exit_event.detach()
        for fd in (self._wake_read, self._wake_write):
            try:
                os.close(fd)
            except OSError:
                pass
