"""The confirmation dialog for a dangerous action: shows the host and the exact command; No is the default."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True only on `y` or the Yes button; `n`, escape and No dismiss with False."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 110; max-width: 95%; height: auto; max-height: 90%; padding: 1 2;
        border: thick $error; background: $surface;
    }
    ConfirmScreen #confirm-title { text-style: bold; color: $text-error; margin-bottom: 1; }
    ConfirmScreen #confirm-host { margin-bottom: 1; }
    ConfirmScreen VerticalScroll { height: auto; max-height: 20; margin-bottom: 1; background: $boost; }
    ConfirmScreen #confirm-command { padding: 0 1; color: $text; }
    ConfirmScreen Horizontal { height: auto; align: right middle; }
    ConfirmScreen Button { margin-left: 2; }
    """

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm-yes"),
        Binding("n", "answer(False)", "No", id="confirm-no"),
        Binding("escape", "answer(False)", "Cancel", id="confirm-cancel"),
    ]

    def __init__(self, title: str, host: str, command: str) -> None:
        super().__init__()
        self.title_text = title
        self.host = host
        self.command = command

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Label(self.title_text, id="confirm-title")
            yield Label(f"on host: {self.host}", id="confirm-host")
            yield Label("this will run:")
            with VerticalScroll():
                yield Static(self.command, id="confirm-command", markup=False)
            with Horizontal():
                yield Button("Yes (y)", variant="error", id="yes")
                yield Button("No (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")
