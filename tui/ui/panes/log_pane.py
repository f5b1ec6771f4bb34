"""The log pane: a status line (following / +N new lines / filter / search), the log view and a search box."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.widgets import Input, Static

from tui.ui.panes.log_view import LogLine, LogView
from tui.ui.widgetargs import WidgetArgs

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from 3.11

SEVERITY_WORDS = {"warning": "warnings and errors", "error": "errors only"}


class LogStatus(Static):
    """One line under the log title: what the view is doing."""


class LogPane(Vertical):
    """Owns the log view; the app forwards log lines and log keys here."""

    ALLOW_MAXIMIZE = True  # key 1 maximizes the pane (status line and all), not only the view inside it

    DEFAULT_CSS = """
    LogPane { height: 1fr; border: round $panel; border-title-color: $text-muted; }
    LogPane:focus-within { border: round $primary; }
    LogPane > LogStatus { height: 1; color: $text-muted; }
    LogPane > Input { display: none; height: 3; }
    LogPane.-searching > Input { display: block; }
    """

    def __init__(self, max_lines: int = 20_000, **kwargs: Unpack[WidgetArgs]) -> None:
        super().__init__(**kwargs)
        self._max_lines = max_lines
        self._early_lines: list[LogLine] = []
        self._early_live: str | None = None
        self.border_title = "log"

    def compose(self) -> ComposeResult:
        yield LogStatus(id="log-status")
        yield LogView(max_lines=self._max_lines, id="log-view")
        yield Input(placeholder="search the log: a regex, any case (enter: find, escape: close)", id="log-search")

    @property
    def view(self) -> LogView:
        return self.query_one(LogView)

    def on_mount(self) -> None:
        self.watch(self.view, "following", self._refresh_status, init=False)
        self.watch(self.view, "pending", self._refresh_status, init=False)
        self.view.append(self._early_lines)
        self.view.set_live(self._early_live)
        self._early_lines = []
        self._refresh_status()

    def append(self, lines: Iterable[LogLine]) -> None:
        try:
            view = self.view
        except NoMatches:  # a batch can arrive before the pane's children are mounted: keep it for on_mount
            self._early_lines.extend(lines)
            return
        view.append(lines)

    def set_live(self, live: str | None) -> None:
        """Show (or clear) the line still being written."""
        try:
            self.view.set_live(live)
        except NoMatches:
            self._early_live = live

    @property
    def live(self) -> str | None:
        try:
            return self.view.live
        except NoMatches:
            return self._early_live

    def refresh_status(self) -> None:
        self._refresh_status()

    def _refresh_status(self, *_: object) -> None:
        view = self.view
        text = Text()
        if view.following:
            text.append("following", style="bold")
        elif view.pending:
            text.append(f" +{view.pending} new lines ", style="reverse bold")
            text.append("  f: follow")
        else:
            text.append("paused scrolling", style="bold")
            text.append("  f: follow")
        if view.rank_filter:
            text.append(f"   rank {view.rank_filter} only", style="bold")
        if view.wrap:
            text.append("   wrap")
        if view.hide_probes:
            text.append("   probes hidden")
        if view.search_term:
            at, count = view.match_position()
            where = f"{at}/{count}" if at else f"{count} matching"
            text.append(f"   /{view.search_term}  {where}", style="bold")
            text.append(
                "  n/N: next/previous  F: " + ("all lines" if view.only_matches else "only these") + "  esc: clear"
            )
        self.query_one(LogStatus).update(text)

    # ------------------------------------------------------------------------------------- intents (keys)

    def follow(self) -> None:
        self.view.follow()
        self._refresh_status()

    def toggle_wrap(self) -> None:
        self.view.set_wrap(not self.view.wrap)
        self._refresh_status()

    def toggle_probes(self) -> bool:
        """Hide (or show again) sglang-tui's own probe lines; True when they are now hidden."""
        self.view.set_hide_probes(not self.view.hide_probes)
        self._refresh_status()
        return self.view.hide_probes

    def cycle_severity(self) -> str | None:
        """All lines → warnings and errors → errors only → all lines; the pane's title says which."""
        nxt = {None: "warning", "warning": "error"}.get(self.view.severity)
        self.view.set_severity(nxt)
        self.border_title = "log" + (f" · {SEVERITY_WORDS[nxt]}" if nxt else "")
        self._refresh_status()
        return nxt

    def cycle_rank_filter(self) -> str | None:
        """All ranks → first rank → … → last rank → all ranks."""
        ranks = self.view.ranks
        current = self.view.rank_filter
        if not ranks:
            nxt = None
        elif current is None or current not in ranks:
            nxt = ranks[0]
        else:
            i = ranks.index(current)
            nxt = ranks[i + 1] if i + 1 < len(ranks) else None
        self.view.set_rank_filter(nxt)
        self._refresh_status()
        return nxt

    def start_search(self) -> None:
        self.add_class("-searching")
        box = self.query_one(Input)
        box.value = self.view.search_term or ""
        box.focus()

    def close_search(self) -> None:
        self.remove_class("-searching")
        self.view.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        found = self.view.find(event.value, backwards=True, from_cursor=False)
        self.close_search()
        self._refresh_status()
        if event.value and not found:
            self.app.notify(f"not found: {event.value}", severity="warning", timeout=3)

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape" and self.has_class("-searching"):
            event.stop()
            self.close_search()
        elif event.key == "escape" and self.view.search_term:
            event.stop()
            self.clear_search()

    def clear_search(self) -> None:
        """Esc: the search term, its highlight and its filter are gone."""
        self.view.clear_search()
        self._refresh_status()
        refresh_keys = getattr(self.app, "_refresh_keys", None)
        if refresh_keys is not None:  # the footer drops n/N
            refresh_keys()

    def toggle_only_matches(self) -> bool:
        """Show only the lines the search matches, or every line again; False when there is no search."""
        if not self.view.search_term:
            return False
        self.view.set_only_matches(not self.view.only_matches)
        self._refresh_status()
        return True

    def next_problem(self, backwards: bool = False) -> bool:
        found = self.view.find_problem(backwards=backwards)
        self._refresh_status()
        return found

    def search_next(self, backwards: bool = False) -> bool:
        if not self.view.search_term:
            return False
        found = self.view.find(self.view.search_term, backwards=backwards)
        self._refresh_status()
        return found
