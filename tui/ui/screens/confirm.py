"""The confirmation dialog for a dangerous action: a summary first (host, processes, GPU memory held, what will
happen in one line), the exact commands one key (`c`) away; No is the default."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Label, Static

from tui.core.fmt import gib_bytes
from tui.core.state import Readiness
from tui.core.termtext import terminal_safe
from tui.ui.screens.overlay import NoticeLine, Overlay


def summary_lines(host: str, state: Readiness, will: str) -> list[str]:
    """The dialog's first lines: where, how many processes, the GiB they hold per GPU, and what will happen
    (`will`, tui.ui.offers.will)."""
    pids = state.process_pids
    procs = f"{len(pids)} process{'es' if len(pids) != 1 else ''}" if pids else "its processes (none seen yet)"
    if not pids and state.process_alive is False and state.process_visible:
        procs = "no process running"
    lines = [
        f"host:    {host}",
        f"server:  {procs}"
        + (
            f" (pid {pids[0]} and {len(pids) - 1} more)" if len(pids) > 1 else (f" (pid {pids[0]})" if pids else "")
        ),  # fmt: skip
    ]
    held: list[tuple[int, int]] = []
    gpus = state.gpus.gpus if state.gpus is not None else ()
    ours = set(pids)
    # by PID when the probe saw the server's own PIDs on the GPUs, else its processes by title (sglang::…)
    by_pid = any(p.pid in ours for g in gpus for p in g.procs)
    for gpu in gpus:
        mine = [p for p in gpu.procs if (p.pid in ours if by_pid else (p.name or "").startswith("sglang"))]
        total = sum(p.used_bytes or 0 for p in mine)
        if total:
            held.append((gpu.index, total))
    sizes = [n for _, n in held]
    gpus_named = ", ".join(str(i) for i, _ in held)
    if len(held) > 1 and max(sizes) - min(sizes) <= 0.02 * max(sizes):  # about the same on each: one phrase
        low, high = gib_bytes(min(sizes)), gib_bytes(max(sizes))
        amount = low if low == high else f"{low.split()[0]}–{high}"
        words = f"{amount} on each of {len(held)} GPUs ({gpus_named})"
    else:
        words = ", ".join(f"GPU{i} {gib_bytes(n)}" for i, n in held) or "no GPU memory seen"
    lines.append("holds:   " + words)
    lines.append(f"will:    {will}")
    return lines


BOX_ROWS = 14  # the dialog's rows around the commands: border, padding, title, the `c` line, buttons, a notice
BOX_WIDE = 110  # the dialog with its exact commands shown (long sh lines)
BOX_NARROW = 60  # the least: title, buttons
BOX_FRAME = 8  # border and padding, both sides


def box_width(title: str, summary: list[str]) -> int:
    """As wide as its summary needs (a terminate of one server is short: no wide empty box), at most BOX_WIDE."""
    longest = max([len(title), *(len(line) for line in summary)])
    return max(BOX_NARROW, min(BOX_WIDE, longest + BOX_FRAME))


class ConfirmScreen(Overlay[bool]):
    """Dismisses with True only on `y` or the Yes button; `n`, escape and No dismiss with False. `c` shows the exact
    commands (and hides them again): the dialog leads with what will happen, in a few lines."""

    BOX = "#confirm-box"

    DEFAULT_CSS = """
    ConfirmScreen #confirm-box {
        width: 110; max-width: 95%; height: auto; max-height: 100%; padding: 1 2;
        border: thick $error; background: $surface;
    }
    ConfirmScreen #confirm-title { text-style: bold; color: $text-error; margin-bottom: 1; }
    ConfirmScreen #confirm-summary { margin-bottom: 1; }
    ConfirmScreen #confirm-commands-key { color: $text-muted; }
    ConfirmScreen VerticalScroll { display: none; height: auto; background: $boost; }
    ConfirmScreen.-commands VerticalScroll { display: block; }
    ConfirmScreen.-commands #confirm-summary { display: none; }
    ConfirmScreen #confirm-command { padding: 0 1; color: $text; }
    ConfirmScreen Horizontal { height: auto; align: right middle; margin-top: 1; }
    ConfirmScreen Button { margin-left: 2; }
    ConfirmScreen.-compact #confirm-box { padding: 0 2; }
    ConfirmScreen.-compact #confirm-title { margin-bottom: 0; }
    ConfirmScreen.-compact #confirm-summary { margin-bottom: 0; }
    ConfirmScreen.-compact NoticeLine { margin-top: 0; }
    ConfirmScreen.-compact Horizontal { margin-top: 0; }
    """

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm-yes"),
        Binding("n", "answer(False)", "No", id="confirm-no"),
        Binding("escape", "answer(False)", "Cancel", id="confirm-cancel"),
        Binding("c", "commands", "Commands", id="confirm-commands"),
    ]

    def __init__(self, title: str, host: str, command: str | None, summary: list[str] | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.host = host
        self.command = command
        self.summary = list(summary or [f"host:    {host}"])

    @property
    def command_lines(self) -> int:
        return self.command.count("\n") + 1 if self.command else 0

    def compose_dialog(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Label(terminal_safe(self.title_text), id="confirm-title", markup=False)
            yield Static(terminal_safe("\n".join(self.summary)), id="confirm-summary", markup=False)
            if self.command:
                yield Static(self._commands_key(), id="confirm-commands-key", markup=False)
                with VerticalScroll(id="confirm-commands"):
                    yield Static(terminal_safe(self.command), id="confirm-command", markup=False)
            yield NoticeLine()
            with Horizontal():
                yield Button("Yes (y)", variant="error", id="yes")
                yield Button("No (n)", variant="primary", id="no")

    def _commands_key(self) -> str:
        n = self.command_lines
        lines = f"{n} line{'s' if n != 1 else ''} of sh"
        return (
            f"c: hide the exact commands ({lines})"
            if self.has_class("-commands")
            else f"c: the exact commands ({lines})"
        )

    def on_mount(self) -> None:
        self.query_one("#confirm-box").styles.width = box_width(self.title_text, self.summary)
        self.query_one("#no", Button).focus()

    def action_commands(self) -> None:
        """Show the exact commands (focused, so the arrows scroll them), or hide them again."""
        if not self.command:
            return
        self.toggle_class("-commands")
        self.query_one("#confirm-box").styles.width = (
            BOX_WIDE if self.has_class("-commands") else box_width(self.title_text, self.summary)
        )
        self.query_one("#confirm-commands-key", Static).update(self._commands_key())
        if self.has_class("-commands"):
            scroll = self.query_one("#confirm-commands", VerticalScroll)
            top = self.query_one("#confirm-box").styles.margin.top
            scroll.styles.max_height = max(3, self.size.height - top - BOX_ROWS)  # the buttons stay in view
            scroll.focus()
        else:
            self.query_one("#no", Button).focus()

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")
