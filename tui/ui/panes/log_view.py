"""A bounded, fast log tail: follows while at the bottom, counts new lines while scrolled up, search, rank filter, wrap."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING

from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Size
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.core.loglines import classify_line
from tui.core.probes import is_probe_line
from tui.core.ranklabels import sort_key
from tui.core.termtext import terminal_safe
from tui.ui.text import wrap_spans
from tui.ui.widgetargs import WidgetArgs

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from 3.11

# The SGLang envelope `[2025-11-29 10:00:09 DP1 TP3] …`: the rank label, for the rank filter.
_RANK_PREFIX = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? ((?:[A-Z]{2}\d+ ?)+)\]")


class _Unknown(Enum):
    """Not worked out yet (None is a known answer: no kind, no rank)."""

    UNKNOWN = 0


_UNKNOWN = _Unknown.UNKNOWN


class LogLine:
    """One display line (ANSI already stripped); its highlight class and rank label are worked out only
    when first needed, so a flood of lines costs an append each and only the rows on screen get classified."""

    __slots__ = ("text", "_kind", "_rank")

    def __init__(
        self, text: str, kind: str | None | _Unknown = _UNKNOWN, rank: str | None | _Unknown = _UNKNOWN
    ) -> None:
        self.text = text
        self._kind = kind
        self._rank = rank

    @property
    def kind(self) -> str | None:
        """probe (sglang-tui's own, tui.core.probes) | error | warning | milestone | progress | None
        (tui.core.loglines.classify_line)."""
        if self._kind is _UNKNOWN:
            self._kind = "probe" if is_probe_line(self.text) else classify_line(self.text)
        return self._kind

    @property
    def is_probe(self) -> bool:
        return self.kind == "probe"

    @property
    def rank(self) -> str | None:
        """The rank label of the SGLang envelope (`TP3`, `DP1 TP3`), None for other lines."""
        if self._rank is _UNKNOWN:
            match = _RANK_PREFIX.match(self.text)
            self._rank = match.group(1).strip() if match else None
        return self._rank

    def __repr__(self) -> str:
        return f"LogLine({self.text!r})"


def display_text(text: str) -> str:
    """Tabs expanded and control characters made visible, for drawing."""
    if "\t" in text:
        text = text.expandtabs()
    return terminal_safe(text, "�")


def search_pattern(term: str) -> re.Pattern[str]:
    """The search as a case-insensitive regex; a term that is not a valid regex is searched for literally."""
    try:
        return re.compile(term, re.IGNORECASE)
    except re.error:
        return re.compile(re.escape(term), re.IGNORECASE)


class LogView(ScrollView, can_focus=True):
    """Line-API view over at most `max_lines` lines; only visible rows are rendered (and cached)."""

    COMPONENT_CLASSES = {"log--error", "log--warning", "log--milestone", "log--progress", "log--probe", "log--match",
                         "log--cursor"}  # fmt: skip

    DEFAULT_CSS = """
    LogView {
        background: $surface;
        color: $text;
        overflow-x: auto;
        overflow-y: scroll;
        & > .log--error { color: $text-error; background: $error-muted; text-style: bold; }
        & > .log--warning { color: $text-warning; }
        & > .log--milestone { color: $text-success; }
        & > .log--progress { color: $text-accent; }
        & > .log--probe { color: $text-disabled; text-style: dim; }
        & > .log--match { background: $warning; color: $background; }
        & > .log--cursor { background: $primary-muted; }
    }
    """

    following: var[bool] = var(True)
    """True while the view sticks to the newest line."""
    pending: var[int] = var(0)
    """Lines that arrived while the view was not following."""

    def __init__(self, max_lines: int = 20_000, **kwargs: Unpack[WidgetArgs]) -> None:
        super().__init__(**kwargs)
        self.max_lines = max_lines
        self._lines: list[LogLine] = []
        self._base = 0  # absolute number of self._lines[0]
        self._rows: list[tuple[int, int, int]] = []  # (absolute line, start, end) per display row
        self._max_width = 0
        self._wrap_width = 0
        self._cache: LRUCache[tuple[int, int], Strip] = LRUCache(4096)
        self._programmatic_scroll = False
        self.wrap = False
        self.rank_filter: str | None = None
        self.severity: str | None = None  # None: every line; "warning": warnings and errors; "error": errors only
        self.hide_probes = False  # leave out sglang-tui's own probe lines
        self.search_term: str | None = None
        self._pattern: re.Pattern[str] | None = None
        self.only_matches = False  # show only the lines the search matches
        self.cursor: int | None = None  # absolute line number of the selected line
        self.total_received = 0
        self.live: str | None = None  # the open line (a progress bar mid-flight), drawn after the last row

    # ------------------------------------------------------------------------------------------ contents

    @property
    def line_count(self) -> int:
        return len(self._lines)

    @property
    def lines(self) -> list[LogLine]:
        return self._lines

    @property
    def shown_rows(self) -> int:
        """Display rows after the filters (0: the filters leave nothing to show)."""
        return len(self._rows)

    def empty_note(self) -> str | None:
        """What the view says when its filters leave no line to show (never an empty pane without a word)."""
        if self._rows or not self._lines:
            return None
        what = {"error": "error line", "warning": "warning or error line"}.get(self.severity or "", "line")
        if self.rank_filter is not None:
            what += f" of rank {self.rank_filter}"
        if self.only_matches and self.search_term:
            what += f" matching /{self.search_term}"
        if what == "line":
            if not self.hide_probes:
                return None
            what = "line but sglang-tui's own probes"
        return f"no {what} among the {len(self._lines)} lines kept"

    @property
    def ranks(self) -> list[str]:
        """Rank labels in the kept lines, in natural order."""
        return sorted({line.rank for line in self._lines if line.rank}, key=sort_key)

    def visible_texts(self) -> list[str]:
        """The text of the rows on screen now (for tests and copy)."""
        top = round(self.scroll_y)
        out = []
        for abs_line, start, end in self._rows[top : top + self.size.height]:
            out.append(self._lines[abs_line - self._base].text[start:end])
        if self._shows_live() and len(out) < self.size.height and top + len(out) == len(self._rows):
            out.append(self.live or "")
        return out

    def append(self, lines: Iterable[LogLine]) -> None:
        """Add lines at the end; follows when following, else counts them in `pending`."""
        new = list(lines)
        if not new:
            return
        self.total_received += len(new)
        first = self._base + len(self._lines)
        self._lines.extend(new)
        rows_before = len(self._rows)
        widest = max(len(line.text) for line in new)
        if widest > self._max_width:
            self._max_width = widest
        if (
            self.rank_filter is None
            and self.severity is None
            and not self.wrap
            and not self.hide_probes
            and not self.only_matches
        ):
            self._rows.extend((first + offset, 0, len(line.text)) for offset, line in enumerate(new))
        else:
            for offset, line in enumerate(new):
                self._rows.extend(self._rows_for(first + offset, line))
        shown = len(self._rows) - rows_before
        removed_rows = self._trim()
        self._set_virtual_size()
        if self.following:
            self._scroll_to_row(len(self._rows), end=True)
        else:
            if shown:
                self.pending += sum(1 for line in new if self._passes(line))
            if removed_rows:
                self._scroll_to_row(max(0, round(self.scroll_y) - removed_rows))
        self.refresh()

    def clear(self) -> None:
        self._lines.clear()
        self._rows.clear()
        self._cache.clear()
        self._base = 0
        self._max_width = 0
        self.cursor = None
        self.pending = 0
        self._set_virtual_size()
        self.refresh()

    def _trim(self) -> int:
        """Drop the oldest lines beyond max_lines (in chunks, so the cost is amortised); returns rows removed."""
        excess = len(self._lines) - self.max_lines
        if excess <= max(1, self.max_lines // 10):
            return 0
        del self._lines[:excess]
        self._base += excess
        cut = bisect_left(self._rows, (self._base, -1, -1))
        del self._rows[:cut]
        if self.cursor is not None and self.cursor < self._base:
            self.cursor = None
        return cut

    def _passes(self, line: LogLine) -> bool:
        if self.hide_probes and line.is_probe:
            return False
        if self.rank_filter is not None and line.rank != self.rank_filter:
            return False
        if self.severity is not None and not (
            line.kind == "error" or (self.severity == "warning" and line.kind == "warning")
        ):
            return False
        return not (self.only_matches and self._pattern is not None) or self._pattern.search(line.text) is not None

    def _rows_for(self, abs_line: int, line: LogLine) -> list[tuple[int, int, int]]:
        if not self._passes(line):
            return []
        if not self.wrap:
            return [(abs_line, 0, len(line.text))]
        return [(abs_line, start, end) for start, end in wrap_spans(line.text, self._wrap_width)]

    def _rebuild_rows(self) -> None:
        """Recompute display rows after wrap/filter/width changes, keeping the top line in view."""
        top = round(self.scroll_y)
        anchor = self._rows[top][0] if top < len(self._rows) else None
        self._rows = []
        for offset, line in enumerate(self._lines):
            self._rows.extend(self._rows_for(self._base + offset, line))
        self._cache.clear()
        self._set_virtual_size()
        if self.following or anchor is None:
            self._scroll_to_row(len(self._rows), end=True)
        else:
            self._scroll_to_row(bisect_left(self._rows, (anchor, -1, -1)))
        self.refresh()

    def _shows_live(self) -> bool:
        return self.live is not None and self.rank_filter is None and self.severity is None

    def _set_virtual_size(self) -> None:
        width = self.row_width if self.wrap else max(self._max_width, len(self.live or "")) + 1
        size = Size(width, len(self._rows) + self._shows_live())
        old = self.virtual_size
        if size == old:
            return
        if self.is_mounted and width == old.width and self.styles.overflow_y == "scroll":
            # Only the row count changed: the vertical scrollbar is always there and the width decides the other one,
            # so no widget moves. Skip the layout pass of the whole screen a new log line would otherwise cost.
            self.set_reactive(LogView.virtual_size, size)
            self._scroll_update(size)
            return
        self.virtual_size = size

    def set_live(self, text: str | None) -> None:
        """Show (or clear) the open line under the last line; it becomes a line of its own when it ends."""
        if text == self.live:
            return
        self.live = text
        self._set_virtual_size()
        if self.following:
            self._scroll_to_row(len(self._rows), end=True)
        self.refresh()

    # ----------------------------------------------------------------------------------------- scrolling

    def _scroll_to_row(self, row: int, *, end: bool = False) -> None:
        self._programmatic_scroll = True
        try:
            if end:
                self.scroll_end(animate=False, immediate=True, x_axis=False)
            else:
                self.scroll_to(y=row, animate=False, immediate=True)
        finally:
            self._programmatic_scroll = False

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._programmatic_scroll:
            return
        if self.is_vertical_scroll_end:
            self.following = True
        elif new_value < old_value:
            self.following = False

    def watch_following(self, following: bool) -> None:
        if following:
            self.pending = 0

    def follow(self) -> None:
        """Jump to the newest line and stick to it."""
        self.following = True
        self.pending = 0
        self._scroll_to_row(len(self._rows), end=True)

    @property
    def row_width(self) -> int:
        """The cells a row has on screen: the content less the vertical scrollbar (always there)."""
        return self.scrollable_content_region.width or self.size.width

    def on_resize(self, event: events.Resize) -> None:
        if self.wrap and self.row_width != self._wrap_width:
            self._wrap_width = self.row_width
            self._rebuild_rows()
        elif self.following:
            self.call_after_refresh(self._scroll_to_row, len(self._rows), end=True)

    # ------------------------------------------------------------------------------ wrap, filter, search

    def set_wrap(self, wrap: bool) -> None:
        self.wrap = wrap
        self._wrap_width = self.row_width
        self._rebuild_rows()

    def set_rank_filter(self, rank: str | None) -> None:
        self.rank_filter = rank
        self._rebuild_rows()

    def set_severity(self, severity: str | None) -> None:
        """None: every line; "warning": warnings and errors; "error": errors only."""
        self.severity = severity
        self._rebuild_rows()

    def set_hide_probes(self, hide: bool) -> None:
        self.hide_probes = hide
        self._rebuild_rows()

    def probe_count(self) -> int:
        """Kept lines that are sglang-tui's own probes."""
        return sum(1 for line in self._lines if line.is_probe)

    def set_only_matches(self, on: bool) -> None:
        """Show only the lines the search matches (off again: every line)."""
        self.only_matches = on
        self._rebuild_rows()

    def clear_search(self) -> None:
        """No search term, no highlight, no match filter."""
        self.search_term = None
        self._pattern = None
        self._cache.clear()
        if self.only_matches:
            self.only_matches = False
            self._rebuild_rows()
        self.refresh()

    def match_position(self) -> tuple[int, int]:
        """(which match the cursor is on, 1-based; 0 when not on one, how many lines match)."""
        if self._pattern is None:
            return 0, 0
        matching = [
            self._base + i
            for i, line in enumerate(self._lines)
            if self._passes(line) and self._pattern.search(line.text)
        ]
        if self.cursor is None or not matching:
            return 0, len(matching)
        pos = bisect_left(matching, self.cursor)
        return (pos + 1 if pos < len(matching) and matching[pos] == self.cursor else 0), len(matching)

    def find(self, term: str, *, backwards: bool = False, from_cursor: bool = True) -> bool:
        """Select the next (or previous) line the regex `term` matches (case-insensitive), wrapping around."""
        if term != self.search_term:
            self._pattern = search_pattern(term) if term else None
            if self.only_matches:
                self.search_term = term or None
                self._rebuild_rows()
        self.search_term = term or None
        self._cache.clear()
        if not term:
            self.refresh()
            return False
        pattern = self._pattern or search_pattern(term)
        candidates = [self._base + i for i, line in enumerate(self._lines) if self._passes(line)]
        if not candidates:
            self.refresh()
            return False
        if self.cursor is not None and from_cursor:
            pos = bisect_left(candidates, self.cursor)
            start = (
                pos - 1 if backwards else pos + (1 if pos < len(candidates) and candidates[pos] == self.cursor else 0)
            )
        else:
            start = len(candidates) - 1 if backwards else 0
        count = len(candidates)
        step = -1 if backwards else 1
        for k in range(count):
            abs_line = candidates[(start + step * k) % count]
            if pattern.search(self._lines[abs_line - self._base].text):
                self.select_line(abs_line)
                return True
        self.refresh()
        return False

    def find_problem(self, *, backwards: bool = False) -> bool:
        """Select the next (or previous) error or warning line after the cursor (or from the end), wrapping around."""
        candidates = [
            self._base + i
            for i, line in enumerate(self._lines)
            if self._passes(line) and line.kind in ("error", "warning")
        ]
        if not candidates:
            return False
        if self.cursor is None:
            target = candidates[-1] if backwards or self.following else candidates[0]
        elif backwards:
            pos = bisect_left(candidates, self.cursor) - 1
            target = candidates[pos % len(candidates)]
        else:
            pos = bisect_left(candidates, self.cursor + 1)
            target = candidates[pos % len(candidates)]
        self.select_line(target)
        return True

    def find_containing(self, text: str) -> bool:
        """Select the newest line shown that holds `text` (the line a verdict names); False when none does."""
        if not text:
            return False
        for i in range(len(self._lines) - 1, -1, -1):
            line = self._lines[i]
            if text in line.text and self._passes(line):
                self.select_line(self._base + i)
                return True
        return False

    def match_count(self) -> int:
        return self.match_position()[1]

    def select_line(self, abs_line: int) -> None:
        """Put the cursor on a line and bring it into view (which stops following)."""
        self.cursor = abs_line
        self._cache.clear()
        self.following = False
        row = bisect_left(self._rows, (abs_line, -1, -1))
        self._scroll_to_row(max(0, row - self.size.height // 2))
        self.refresh()

    def selected_text(self) -> str | None:
        if self.cursor is None or self.cursor < self._base:
            return None
        return self._lines[self.cursor - self._base].text

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        row = round(self.scroll_y) + offset.y
        if 0 <= row < len(self._rows):
            self.cursor = self._rows[row][0]
            self._cache.clear()
            self.refresh()

    # ------------------------------------------------------------------------------------------ rendering

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.row_width
        base_style = self.rich_style
        row = scroll_y + y
        if row == len(self._rows) and self._shows_live():
            live = Text(display_text(self.live or ""), no_wrap=True, end="")
            live.stylize(base_style)
            live.stylize(self.get_component_rich_style("log--progress", partial=True))
            strip = Strip(live.render(self.app.console), live.cell_len)
            return strip.crop_extend(0 if self.wrap else scroll_x, (0 if self.wrap else scroll_x) + width, base_style)
        if row >= len(self._rows):
            note = self.empty_note() if row == 0 else None
            if note is not None:
                text = Text(note, no_wrap=True, end="", style=base_style)
                text.stylize(self.get_component_rich_style("log--probe", partial=True))
                return Strip(text.render(self.app.console), text.cell_len).crop_extend(0, width, base_style)
            return Strip.blank(width, base_style)
        abs_line, start, end = self._rows[row]
        cached = self._cache.get((abs_line, start))
        if cached is None:
            cached = self._render_row(abs_line, start, end, base_style)
            self._cache[(abs_line, start)] = cached
        if self.wrap:
            return cached.crop_extend(0, width, base_style)
        return cached.crop_extend(scroll_x, scroll_x + width, base_style)

    def _render_row(self, abs_line: int, start: int, end: int, base_style: Style) -> Strip:
        line = self._lines[abs_line - self._base]
        text = Text(display_text(line.text[start:end]), no_wrap=True, end="")
        text.stylize(base_style)
        if line.kind:
            text.stylize(self.get_component_rich_style(f"log--{line.kind}", partial=True))
        if abs_line == self.cursor:
            text.stylize(self.get_component_rich_style("log--cursor", partial=True))
        if self.search_term and self._pattern is not None:
            match_style = self.get_component_rich_style("log--match", partial=True)
            for match in self._pattern.finditer(text.plain):
                if match.end() > match.start():
                    text.stylize(match_style, match.start(), match.end())
        return Strip(text.render(self.app.console), text.cell_len)
