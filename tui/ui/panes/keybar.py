"""The footer: the keys that matter now, chosen by priority to fit the width (the dangerous ones always)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.widgets import Static

from tui.ui import actions
from tui.ui.widgetargs import WidgetArgs

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from 3.11


@dataclass(frozen=True)
class KeyHint:
    """One footer entry: what is typed, its word, the action it runs, and how much it matters (0 first)."""

    keys: str
    word: str
    action: str
    priority: int
    dangerous: bool = False


KEYMAP: dict[str, str] = {}
"""Remapped keys by action id (the settings' [keys]), set by the app: the footer shows what to type."""


def key_for(action_id: str) -> str:
    """The first key of a registry action, as typed (`?`, `/`, `r`), after any remap."""
    return keys_for(action_id)[0]


def keys_for(action_id: str) -> list[str]:
    """Every key of a registry action, as typed, after any remap (`q`, `ctrl+q`, `ctrl+c`)."""
    a = actions.by_id(action_id)
    if a is None:
        return ["?"]
    return [k.strip("`") for k in actions.remapped(a, KEYMAP).display_key.split(" / ")]


def _quit_keys() -> str:
    """`q/^q`: the first two keys of quit, ctrl written as ^ (nano's and htop's footers)."""
    return "/".join(k.replace("ctrl+", "^") for k in keys_for("quit")[:2])


def hints(*, offered: Mapping[str, str], focused: str, searching: bool, width: int) -> list[KeyHint]:
    """The footer's entries in display order; the caller drops the least important ones to fit. `offered`: the
    dangerous actions that can work now (action id -> word, tui.ui.offers); only those are shown."""
    log = focused == "log"
    out = [
        KeyHint(_quit_keys(), "quit", "quit", 0),
        KeyHint(key_for("help"), "help", "help", 0),
        KeyHint(key_for("search"), "search", "search", 2 if log else 4),
    ]
    if searching:
        out.append(KeyHint(f"{key_for('search-next')}/{key_for('search-previous')}", "match", "search_next", 1))
    out += [
        KeyHint(f"{key_for('next-problem')}/{key_for('previous-problem')}", "error", "next_problem", 3 if log else 5),
        KeyHint(key_for("follow"), "follow", "follow", 3 if log else 6),
        KeyHint(key_for("rank-filter"), "rank", "rank_filter", 5 if log else 7),
        KeyHint(key_for("wrap"), "wrap", "wrap", 7 if log else 8),
        KeyHint(key_for("copy"), "copy", "copy", 6),
        KeyHint(key_for("pause"), "pause", "pause", 4),
        KeyHint("1-4", "panes" if not focused or log else "again: zoom", "pane('log')", 2 if not log else 3),
    ]
    for action_id, word in offered.items():
        a = actions.by_id(action_id)
        if a is not None:
            out.append(KeyHint(key_for(action_id), word, a.action, 0, dangerous=True))
    return out


def fit(entries: list[KeyHint], width: int) -> list[KeyHint]:
    """Drop the least important entries (last in display order first among equals) until the line fits."""
    kept = list(entries)
    while kept and _width(kept) > width:
        worst = max(range(len(kept)), key=lambda i: (kept[i].priority, i))
        if kept[worst].priority == 0:  # never dropped: shorten the words instead
            break
        del kept[worst]
    return kept


def _width(entries: list[KeyHint]) -> int:
    return sum(len(e.keys) + len(e.word) + 3 for e in entries)


class KeyBar(Static):
    """One line of `key word` pairs; a click on one runs its action."""

    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; background: $panel; color: $text; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, **kwargs: Unpack[WidgetArgs]) -> None:
        super().__init__(**kwargs)
        self._keys_for: tuple[object, ...] | None = None
        self._click_spans: list[tuple[int, int, str]] = []
        self.shown: list[KeyHint] = []

    def show_for(self, *, offered: Mapping[str, str], focused: str, searching: bool) -> None:
        """Redraw for this context (only when it or the width changed)."""
        width = self.size.width or self.app.size.width
        context = (tuple(offered.items()), focused, searching, width)
        if context == self._keys_for:
            return
        self._keys_for = context
        entries = fit(hints(offered=offered, focused=focused, searching=searching, width=width), width)
        compact = _width(entries) > width
        text = Text(no_wrap=True, overflow="ellipsis")
        self._click_spans = []
        for e in entries:
            start = len(text.plain)
            text.append(f" {e.keys} ", style="bold reverse red" if e.dangerous else "bold reverse")
            word = e.word[:4] if compact else e.word
            text.append(f"{word} ")
            self._click_spans.append((start, len(text.plain), e.action))
        self.shown = entries
        self.update(text)

    def on_click(self, event: events.Click) -> None:
        for start, end, action in self._click_spans:
            if start <= event.x < end:
                self.app.call_later(self.app.run_action, action)
                return
