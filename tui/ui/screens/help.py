"""The help screen: the key table generated from the action registry."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

from tui.ui.actions import key_table_markdown

INTRO = """\
# sglang-tui keys

Phases come from the log and from `/health`; *log says* and *health says* are two facts.
Dangerous actions ask first and show the exact command they run on the host.

"""


class HelpScreen(ModalScreen[None]):
    """Any of escape, q or ? closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 100; max-width: 95%; height: auto; max-height: 90%; border: round $primary; background: $surface; padding: 0 1; }
    """

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "close", "Close", id="help-close"),
    ]

    def __init__(self, read_only: bool) -> None:
        super().__init__()
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(INTRO + key_table_markdown(self.read_only))

    def action_close(self) -> None:
        self.dismiss(None)
