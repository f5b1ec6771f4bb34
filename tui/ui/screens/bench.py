"""The bench's result: the figures, what the acceptance length bounds, and the change since the last launch."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Label, Static

from tui.core.benchstats import BenchResult, compare, render
from tui.ui.screens.overlay import NoticeLine, Overlay


class BenchResultScreen(Overlay[None]):
    """Any of escape, enter, q or b closes it."""

    BOX = "#bench-box"

    DEFAULT_CSS = """
    BenchResultScreen #bench-box {
        width: 110; max-width: 95%; height: auto; max-height: 100%; padding: 1 2;
        border: thick $accent; background: $surface;
    }
    BenchResultScreen #bench-title { text-style: bold; margin-bottom: 1; }
    BenchResultScreen #bench-compare { margin-top: 1; color: $text-accent; }
    """

    BINDINGS = [Binding("escape,enter,q,b", "close", "Close", id="bench-close")]

    def __init__(self, result: BenchResult, where: str, previous: BenchResult | None = None,
                 history: bool = False) -> None:  # fmt: skip
        super().__init__()
        self.result = result
        self.where = where
        self.previous = previous
        self.history = history  # a history store is wired: say so when it holds no earlier bench

    def compose_dialog(self) -> ComposeResult:
        with Vertical(id="bench-box"):
            yield Label(f"bench of {self.where}", id="bench-title")
            yield Static("\n".join(render(self.result)), id="bench-lines", markup=False)
            if self.previous is not None or self.history:
                yield Static(compare(self.previous, self.result), id="bench-compare", markup=False)
            yield NoticeLine()

    def action_close(self) -> None:
        self.dismiss(None)
