"""The confirmation dialog for a dangerous action: a summary first (host, processes, GPU memory held, what will
happen in one line), the exact commands folded below; No is the default."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Collapsible, Label, Static

from tui.core.fmt import gib_bytes
from tui.core.state import Readiness
from tui.core.termtext import terminal_safe

_WHAT_HAPPENS = {
    "restart": "SIGTERM to its process group, wait for every process to go, then launch it again",
    "terminate": "SIGTERM to its process group; what outlives the grace period is listed, GPU memory is checked",
    "kill": "SIGKILL to every process of the server at once (no clean shutdown); GPU memory is checked after",
}


def summary_lines(verb: str, host: str, state: Readiness) -> list[str]:
    """The dialog's first lines: where, how many processes, the GiB they hold per GPU, and what will happen."""
    pids = state.process_pids
    procs = f"{len(pids)} process{'es' if len(pids) != 1 else ''}" if pids else "its processes (none seen yet)"
    lines = [
        f"host:    {host}",
        f"server:  {procs}" + (f" (pid {pids[0]}…)" if len(pids) > 1 else (f" (pid {pids[0]})" if pids else "")),
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
    lines.append(f"will:    {_WHAT_HAPPENS.get(verb, verb)}")
    return lines


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
    ConfirmScreen #confirm-summary { margin-bottom: 1; }
    ConfirmScreen Collapsible { height: auto; margin-bottom: 1; padding: 0; border: none; }
    ConfirmScreen VerticalScroll { height: auto; max-height: 16; background: $boost; }
    ConfirmScreen #confirm-command { padding: 0 1; color: $text; }
    ConfirmScreen Horizontal { height: auto; align: right middle; }
    ConfirmScreen Button { margin-left: 2; }
    """

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm-yes"),
        Binding("n", "answer(False)", "No", id="confirm-no"),
        Binding("escape", "answer(False)", "Cancel", id="confirm-cancel"),
    ]

    def __init__(self, title: str, host: str, command: str, summary: list[str] | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.host = host
        self.command = command
        self.summary = list(summary or [f"host:    {host}"])

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Label(terminal_safe(self.title_text), id="confirm-title", markup=False)
            yield Static(terminal_safe("\n".join(self.summary)), id="confirm-summary", markup=False)
            lines = self.command.count("\n") + 1
            with (
                Collapsible(
                    title=f"the exact commands ({lines} line{'s' if lines != 1 else ''}): tab, enter: show",
                    collapsed=True,
                ),
                VerticalScroll(),
            ):
                yield Static(terminal_safe(self.command), id="confirm-command", markup=False)
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
