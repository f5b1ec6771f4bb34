"""The fleet board's keys (`?`): what each does on the board; the server's own keys are in its view's help."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

BOARD_KEYS: tuple[tuple[str, str], ...] = (
    ("↑ ↓ PgUp PgDn", "move between servers"),
    ("enter", "open the server's full view (its log, shards, GPUs, health; the same keys); esc comes back"),
    ("/", "filter the rows: every word must appear (any column, the group); !word leaves rows out; esc clears"),
    (
        "s / S",
        "sort by the next column (order given, name, where, phase: worst first, in phase, ETA, GPUs) / reverse;"
        " ▲/▼ on the sorted column's header, the cursor stays on its server",
    ),
    ("click a header", "sort by that column"),
    ("← →", "scroll the columns (NAME stays)"),
    (
        "r T K",
        "restart / terminate / kill the server on the row (its view opens and asks first, with the command);"
        " offered where they apply: r with the server's launch command (the inventory's launch)",
    ),
    ("?", "these keys"),
    ("q", "quit (the servers keep running)"),
)


def board_help(read_only: bool) -> Text:
    text = Text()
    for keys, words in BOARD_KEYS:
        if read_only and keys.startswith("r T K"):
            words = "off: --read-only (nothing on the board can change a server)"
        text.append(f"{keys:>15}  ", style="bold")
        text.append(f"{words}\n")
    return text


class FleetHelpScreen(ModalScreen[None]):
    """Escape, q or ? closes it."""

    DEFAULT_CSS = """
    FleetHelpScreen { align: center middle; }
    FleetHelpScreen > VerticalScroll { width: 95%; max-width: 130; height: auto; max-height: 100%;
                                       border: round $primary; background: $surface; padding: 0 1; }
    """

    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close", id="fleet-help-close")]

    def __init__(self, read_only: bool) -> None:
        super().__init__()
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "fleet board keys (esc closes)"
            yield Static(board_help(self.read_only), id="fleet-help-keys")

    def action_close(self) -> None:
        self.dismiss(None)
