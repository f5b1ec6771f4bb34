"""The server's process tree (key P, like htop's F5): PID, state, CPU, RSS and GPU memory per process."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from tui.core.activity import fmt_bytes
from tui.core.proctree import ProcRow, rows
from tui.core.state import Readiness
from tui.core.termtext import terminal_safe
from tui.ui.screens.overlay import NoticeLine, Overlay

_STATES = {"R": "running", "S": "sleeping", "D": "disk wait", "T": "stopped", "t": "traced", "Z": "zombie", "I": "idle"}


def table(tree: list[ProcRow]) -> str:
    """The rows as aligned text; the name indented by depth (htop's tree)."""
    if not tree:
        return "no process sample yet (the process watch sees the server's processes on its host; not in replays)"
    lines = [f"{'PID':>8}  {'STATE':<10} {'CPU%':>6} {'RSS':>10} {'GPU MEM':>10}  PROCESS"]
    for r in tree:
        cpu = f"{r.cpu_pct:.0f}" if r.cpu_pct is not None else "–"
        rss = fmt_bytes(r.rss_bytes) if r.rss_bytes is not None else "–"
        gpu = fmt_bytes(r.gpu_bytes) if r.gpu_bytes is not None else "–"
        branch = ("  " * (r.depth - 1) + "└─ ") if r.depth else ""
        state = _STATES.get(r.state, r.state or "?")
        lines.append(f"{r.pid:>8}  {state:<10} {cpu:>6} {rss:>10} {gpu:>10}  {branch}{r.name}")
    return "\n".join(lines)


class ProcTreeScreen(Overlay[None]):
    """Redraws from the app's state once a second; escape, q or P closes it."""

    BOX = "#proctree-box"

    DEFAULT_CSS = """
    ProcTreeScreen #proctree-box {
        width: 110; max-width: 95%; height: auto; max-height: 100%; padding: 1 2;
        border: thick $accent; background: $surface;
    }
    ProcTreeScreen #proctree-title { text-style: bold; margin-bottom: 1; }
    """

    BINDINGS = [Binding("escape,q,P", "close", "Close", id="proctree-close")]

    def __init__(self, where: str, state: Callable[[], Readiness]) -> None:
        super().__init__()
        self.where = where
        self._state = state

    def compose_dialog(self) -> ComposeResult:
        with VerticalScroll(id="proctree-box"):
            yield Label(terminal_safe(f"processes of the server on {self.where}"), id="proctree-title", markup=False)
            yield Static(self.shown(), id="proctree-lines", markup=False)
            yield NoticeLine()

    def on_mount(self) -> None:  # (Overlay's own on_mount runs too: Textual calls each class's handler)
        self.set_interval(1.0, self._redraw)

    def shown(self) -> str:
        s = self._state()
        return terminal_safe(table(rows(s.activity, s.gpus.gpus if s.gpus is not None else ())))

    def _redraw(self) -> None:
        self.query_one("#proctree-lines", Static).update(self.shown())

    def action_close(self) -> None:
        self.dismiss(None)
