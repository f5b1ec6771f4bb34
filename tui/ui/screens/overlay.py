"""What every dialog of the TUI shares (confirm, bench, help, process tree): it opens under the header, so the verdict
stays in view, and a notice that comes while it is open is shown on the dialog's own message line, never as a toast
over its buttons (the toast is still there once the dialog closes)."""

from __future__ import annotations

from typing import TypeVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

from tui.core.termtext import terminal_safe

ResultT = TypeVar("ResultT")

HEADER = "#header"  # the main screen's header (HeaderPane): its rows stay in view

_SEVERITY_STYLES: dict[str, str] = {"information": "bold", "warning": "bold yellow", "error": "bold red"}


NOTICE_ROWS = 2  # a dialog's message line: at most this many rows (the whole notice is a toast once it closes)


class NoticeLine(Static):
    """A dialog's message line: the newest notice while the dialog is open (hidden while there is none), in at most
    NOTICE_ROWS rows, so that it never pushes the dialog's buttons off a short terminal."""

    DEFAULT_CSS = """
    NoticeLine { display: none; height: auto; max-height: 2; margin-top: 1; }
    NoticeLine.-shown { display: block; }
    """

    def show(self, message: str, title: str = "", severity: SeverityLevel = "information") -> None:
        head = terminal_safe(title) + ": " if title else ""
        words = terminal_safe(" ".join(message.split()))  # one paragraph
        width = (self.parent.content_size.width if isinstance(self.parent, Widget) else 0) or 60
        room = NOTICE_ROWS * width - len(head) - 8  # what wraps into the rows (a word wrapped early costs a little)
        if len(words) > room:
            words = words[: max(0, room - 1)].rstrip() + "…"
        text = Text(no_wrap=False)
        text.append(head, style=_SEVERITY_STYLES.get(severity, "bold"))
        text.append(words)
        self.update(text)
        self.add_class("-shown")


COMPACT_BELOW_ROWS = 24  # rows under the header below which a dialog is drawn without its blank rows


class Overlay(ModalScreen[ResultT]):
    """A modal dialog below the header; a subclass composes its dialog in `compose_dialog` (one box, BOX, with a
    NoticeLine where notices go); `show_notice` puts one there."""

    BOX = "#dialog"  # the selector of the dialog's box (the screen holds Textual's toast rack too)

    DEFAULT_CSS = """
    Overlay { align: center middle; }
    Overlay Toast { display: none; }
    """

    def compose(self) -> ComposeResult:
        yield from self.compose_dialog()

    def compose_dialog(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        self._below_header()

    def on_resize(self, event: events.Resize) -> None:
        self._below_header()

    def follow_header(self) -> None:
        """After the header changed (a failure adds its cause line): keep the dialog under it."""
        self.call_after_refresh(self._below_header)

    def _below_header(self) -> None:
        """Leave the header's rows (the verdict and the phase) in view: the dialog (BOX) is drawn
        under them. An offset, not a margin or the screen's padding: those would be painted over the screen below,
        which shows through only where the screen itself is drawn."""
        try:
            header = self.app.screen_stack[0].query_one(HEADER)
        except (NoMatches, IndexError):
            return
        top = header.region.bottom if header.display else 0
        if self.size.height - top < 12:  # a terminal too short for both: the dialog comes first
            top = 0
        # Few rows under the header (80x24 with a failure's cause and remedy lines): the dialog drops its blank rows,
        # so that its notice and its buttons stay in view (a subclass's CSS says which, under `.-compact`).
        self.set_class(self.size.height - top < COMPACT_BELOW_ROWS, "-compact")
        try:
            box = self.query_one(self.BOX)
        except NoMatches:
            return
        box.styles.max_height = max(1, self.size.height - top)  # centred in the rows under the header: at most
        box.styles.offset = (0, (top + 1) // 2)  # those rows, moved down by half the header

    def show_notice(self, message: str, title: str = "", severity: SeverityLevel = "information") -> None:
        try:
            self.query_one(NoticeLine).show(message, title, severity)
        except NoMatches:
            pass
