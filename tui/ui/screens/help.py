"""The help screen: the keys from the action registry and a legend, sized to the terminal; `/` filters it."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from tui.ui.actions import Action, visible_actions

LEGEND: tuple[tuple[str, str, str], ...] = (
    ("✓", "green", "phase done"),
    ("▶", "bold", "current phase (ticking; ETA in cyan)"),
    ("✗", "bold red", "the phase it failed in"),
    ("■", "bold yellow", "stopped by sglang-tui (terminate, kill)"),
    ("·", "dim", "not reached yet"),
    ("STALE", "bold yellow", "data older than 5 s (link down or slow)"),
    ("+N", "bold yellow", "more rows than fit: the pane's key (2, 3) zooms it"),
)
INTRO = "{keys} ask first and show the exact command; log says and health says are two facts."


def intro(read_only: bool, keymap: Mapping[str, str] | None = None) -> str:
    """The help's first line, with the keys that ask first as they are typed (after any remap)."""
    keys = [_keys(a).split(" / ")[0] for a in visible_actions(read_only, keymap) if a.dangerous]
    if not keys:
        return "Read-only: no key here changes the server; log says and health says are two facts."
    words = ", ".join(keys[:-1]) + f" and {keys[-1]}" if len(keys) > 1 else keys[0]
    return INTRO.format(keys=words)


#: Actions shown on one row together (by id): the row's keys and words.
PAIRS: dict[tuple[str, ...], str] = {
    ("quit", "help"): "Quit (the server keeps running) / show these keys",
    ("search", "search-filter"): "Search the log (a regex; esc clears) / show only the matching lines",
    ("search-next", "search-previous"): "Next / previous match",
    ("copy", "copy-report"): "Copy the selected line (or the error line) / a Markdown report, to the clipboard",
    ("next-problem", "previous-problem"): "Next / previous error or warning line",
    (
        "severity-filter",
        "rank-filter",
        "wrap",
    ): "Log: warnings+errors / errors only / all (cycles); one rank's lines; wrap",
    ("process-tree", "dump"): "Process tree (PID, state, CPU, RSS, GPU memory); dump every rank's stack (py-spy)",
    (
        "pane-log",
        "pane-shards",
        "pane-gpus",
        "pane-health",
    ): "Focus log / weights / GPUs / health; again: maximize; again: restore",
}


def key_rows(read_only: bool, term: str = "", keymap: Mapping[str, str] | None = None) -> list[tuple[str, str, bool]]:
    """(keys, what it does, asks first) for every action whose keys, words or id contain `term` (any case);
    related actions (n/N, e/E, 1-4) share a row so the table fits 24 lines."""
    needle = term.lower().strip()
    shown = visible_actions(read_only, keymap)
    grouped = {i: group for group in PAIRS for i in group}
    rows = []
    done: set[str] = set()
    for a in shown:
        if a.id in done:
            continue
        group = grouped.get(a.id)
        members = [b for b in shown if group and b.id in group] or [a]
        done.update(b.id for b in members)
        keys = " ".join(_keys(b) for b in members) if len(members) > 1 else _keys(a)
        words = PAIRS[group] if group and len(members) > 1 else a.description
        haystack = " ".join([keys, words, *(b.description for b in members), *(b.id for b in members)]).lower()
        if needle and needle not in haystack:
            continue
        rows.append((keys, words, a.dangerous))
    return rows


def _keys(a: Action) -> str:
    return a.display_key.replace("`", "")


def help_text(read_only: bool, term: str, width: int, keymap: Mapping[str, str] | None = None) -> Text:
    """The keys in one column, or two when the screen is wide enough, then the legend."""
    rows = key_rows(read_only, term, keymap)
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(intro(read_only, keymap) + "\n", style="italic")
    if not rows:
        text.append(f"no key matches {term!r}\n", style="yellow")
    key_w = max((len(k) for k, _, _ in rows), default=4) + 2
    columns = 2 if width >= 150 and len(rows) > 8 else 1
    col_w = width // columns
    per_col = (len(rows) + columns - 1) // columns
    for i in range(per_col):
        for c in range(columns):
            j = c * per_col + i
            if j >= len(rows):
                continue
            keys, words, dangerous = rows[j]
            cell = Text()
            cell.append(f"{keys:<{key_w}}", style="bold red" if dangerous else "bold")
            cell.append(words + (" (asks first)" if dangerous and "asks first" not in words else ""))
            cell.truncate(col_w - 2, overflow="ellipsis", pad=c < columns - 1)
            if c:
                text.append("  ")
            text.append_text(cell)
        text.append("\n")
    if not term:
        text.append("\nlegend\n", style="bold underline")
        for mark, style, words in LEGEND:
            text.append(f"{mark:<6}", style=style)
            text.append(words + "\n")
    text.rstrip()
    return text


class HelpScreen(ModalScreen[None]):
    """Escape, q, ? or F1 closes it; `/` filters the keys (escape clears the filter first)."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 95%; max-width: 190; height: auto; max-height: 100%; border: round $primary;
                                  background: $surface; padding: 0 1; }
    HelpScreen Input { display: none; height: 3; }
    HelpScreen.-filtering Input { display: block; }
    """

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "close", "Close", id="help-close"),
        Binding("slash", "filter", "Filter", id="help-filter"),
    ]

    def __init__(self, read_only: bool, keymap: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.read_only = read_only
        self.keymap = dict(keymap or {})
        self.term = ""

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "keys (/ filters, esc closes)"
            yield Input(placeholder="filter the keys (esc: clear)", id="help-filter")
            yield Static(id="help-keys")

    def on_mount(self) -> None:
        self._show()

    def on_resize(self) -> None:
        self._show()

    def _show(self) -> None:
        width = max(40, self.query_one(VerticalScroll).content_size.width or self.app.size.width - 6)
        self.query_one("#help-keys", Static).update(help_text(self.read_only, self.term, width, self.keymap))

    @property
    def shown(self) -> str:
        return help_text(self.read_only, self.term, max(40, self.app.size.width - 6), self.keymap).plain

    def action_filter(self) -> None:
        self.add_class("-filtering")
        self.query_one(Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.term = event.value
        self._show()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.set_focus(None)  # enter keeps the filter; the keys close or filter again

    def on_key(self, event) -> None:  # type: ignore[no-untyped-def]
        if event.key == "escape" and self.has_class("-filtering"):
            event.stop()
            self.term = ""
            self.query_one(Input).value = ""
            self.remove_class("-filtering")
            self.set_focus(None)
            self._show()

    def action_close(self) -> None:
        self.dismiss(None)
