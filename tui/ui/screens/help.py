"""The help screen: the keys from the action registry and a legend, sized to the terminal; `/` filters it."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import replace

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Input, Static

from tui.ui.actions import QUIT_WORDS, Action, visible_actions
from tui.ui.screens.overlay import NoticeLine, Overlay

LEGEND: tuple[tuple[str, str, str], ...] = (
    ("✓", "green", "phase done"),
    ("▶", "bold", "current phase (ticking; ETA in cyan)"),
    ("✗", "bold red", "the phase it failed in"),
    ("■", "bold yellow", "stopped by sglang-tui (terminate, kill)"),
    ("·", "dim", "not reached yet"),
    ("STALE", "bold yellow", "data older than 5 s (link down or slow)"),
    ("+N", "bold yellow", "more rows than fit: the pane's key (2, 3) zooms it"),
)
INTRO = (
    "{keys} ask first (c there shows the exact commands) and are offered only when they can work; "
    "log says and health says are two facts."
)


def intro(read_only: bool, keymap: Mapping[str, str] | None = None) -> str:
    """The help's first line, with the keys that ask first as they are typed (after any remap)."""
    keys = [_keys(a).split(" / ")[0] for a in visible_actions(read_only, keymap) if a.dangerous]
    if not keys:
        return "Read-only: no key here changes the server; log says and health says are two facts."
    words = ", ".join(keys[:-1]) + f" and {keys[-1]}" if len(keys) > 1 else keys[0]
    return INTRO.format(keys=words)


#: Actions shown on one row together (by id): the row's keys and words.
PAIRS: dict[tuple[str, ...], str] = {
    ("search", "search-filter"): "Search the log (a regex; esc clears) / show only the matching lines",
    ("search-next", "search-previous"): "Next / previous match",
    ("log-down", "log-up", "log-top"): "Scroll the log down / up a line; jump to the oldest line (G: the newest)",
    ("copy", "copy-report"): "Copy the selected line (or the error line) / a Markdown report: to the terminal's "
    "clipboard (OSC 52) and a file under $XDG_STATE_HOME/sglang-tui",
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
KEYS_WIDTH = 16  # the keys column; a row whose keys are longer starts its words on the next line


def key_rows(
    read_only: bool, term: str = "", keymap: Mapping[str, str] | None = None, quit_words: str = QUIT_WORDS
) -> list[tuple[str, str, bool]]:
    """(keys, what it does, asks first) for every action whose keys, words or id contain `term` (any case);
    related actions (n/N, e/E, 1-4) share a row. `quit_words`: what q does here (the demo stops its server)."""
    needle = term.lower().strip()
    shown = [replace(a, description=quit_words) if a.id == "quit" else a for a in visible_actions(read_only, keymap)]
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


def _cell(keys: str, words: str, dangerous: bool, width: int) -> list[Text]:
    """One key row as lines of at most `width` cells: the keys, then the words wrapped under their own column."""
    words += " (asks first)" if dangerous and "asks first" not in words else ""
    key_style = "bold red" if dangerous else "bold"
    lines: list[Text] = []
    if len(keys) + 1 > KEYS_WIDTH:  # long keys (q / ctrl+q / ctrl+c): a line of their own
        lines.append(Text(keys, style=key_style))
        keys = ""
    for i, chunk in enumerate(textwrap.wrap(words, max(10, width - KEYS_WIDTH), break_on_hyphens=False) or [""]):
        line = Text()
        line.append(f"{keys if i == 0 else '':<{KEYS_WIDTH}}", style=key_style)
        line.append(chunk)
        lines.append(line)
    return lines


def help_text(
    read_only: bool, term: str, width: int, keymap: Mapping[str, str] | None = None, quit_words: str = QUIT_WORDS
) -> Text:
    """The keys in one column, or two when the screen is wide enough, then the legend; every line fits `width`:
    the words wrap (nothing is cut)."""
    rows = key_rows(read_only, term, keymap, quit_words)
    text = Text(no_wrap=True)
    for line in textwrap.wrap(intro(read_only, keymap), width, break_on_hyphens=False) or [""]:
        text.append(line + "\n", style="italic")
    if not rows:
        text.append(f"no key matches {term!r}\n", style="yellow")
    columns = 2 if width >= 150 and len(rows) > 8 else 1
    col_w = (width - 2 * (columns - 1)) // columns
    cells = [_cell(keys, words, dangerous, col_w) for keys, words, dangerous in rows]
    per_col = (len(cells) + columns - 1) // columns
    for i in range(per_col):
        left, right = cells[i], cells[per_col + i] if columns > 1 and per_col + i < len(cells) else []
        for k in range(max(len(left), len(right))):
            if k < len(left):
                text.append_text(left[k])
            if right:
                text.append(" " * (col_w - (left[k].cell_len if k < len(left) else 0) + 2))
                if k < len(right):
                    text.append_text(right[k])
            text.append("\n")
    if not term:
        text.append("\nlegend\n", style="bold underline")
        for mark, style, words in LEGEND:
            text.append(f"{mark:<6}", style=style)
            text.append(words + "\n")
    text.rstrip()
    return text


class HelpScreen(Overlay[None]):
    """Escape, q, ? or F1 closes it; `/` filters the keys (escape clears the filter first); j/k scroll it."""

    BOX = "#help-box"

    DEFAULT_CSS = """
    HelpScreen #help-box { width: 95%; max-width: 190; height: auto; max-height: 100%; border: round $primary;
                                  background: $surface; padding: 0 1; }
    HelpScreen Input { display: none; height: 3; }
    HelpScreen.-filtering Input { display: block; }
    """

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "close", "Close", id="help-close"),
        Binding("slash", "filter", "Filter", id="help-filter"),
        Binding("j", "scroll_help(1)", "Down", show=False, id="help-down"),
        Binding("k", "scroll_help(-1)", "Up", show=False, id="help-up"),
    ]

    def __init__(self, read_only: bool, keymap: Mapping[str, str] | None = None, quit_words: str = QUIT_WORDS) -> None:
        super().__init__()
        self.read_only = read_only
        self.keymap = dict(keymap or {})
        self.quit_words = quit_words
        self.term = ""

    def compose_dialog(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as scroll:
            scroll.border_title = "keys (/ filters, esc closes)"
            yield Input(placeholder="filter the keys (esc: clear)", id="help-filter")
            yield Static(id="help-keys")
            yield NoticeLine()

    def on_mount(self) -> None:
        self._show()
        self.watch(self.query_one(VerticalScroll), "scroll_y", lambda _: self._say_more(), init=False)

    def on_resize(self, event: events.Resize) -> None:
        self._show()

    def _width(self) -> int:
        return max(40, self.query_one(VerticalScroll).scrollable_content_region.width or self.app.size.width - 8)

    def _show(self) -> None:
        text = help_text(self.read_only, self.term, self._width(), self.keymap, self.quit_words)
        self.query_one("#help-keys", Static).update(text)
        self.call_after_refresh(self._say_more)

    def _say_more(self) -> None:
        """The border says when the keys go on below (a short terminal): j/k or the arrows scroll them."""
        scroll = self.query_one(VerticalScroll)
        more = scroll.max_scroll_y > 0 and scroll.scroll_y < scroll.max_scroll_y
        scroll.border_subtitle = "more below: j/k, ↓/↑, PgDn" if more else None

    @property
    def shown(self) -> str:
        return help_text(self.read_only, self.term, self._width(), self.keymap, self.quit_words).plain

    def action_scroll_help(self, rows: int) -> None:
        self.query_one(VerticalScroll).scroll_relative(y=rows, animate=False)

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
