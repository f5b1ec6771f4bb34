"""The fleet board (`sglang-tui fleet` on a terminal): one row per server, k9s habits.

`/` filters (tui.core.fleet.matches), `s`/`S` sort by the next column / reverse (or a click on a header), Enter
opens the row's full view (tui/ui/app.py's ServerScreen, built by the command layer: the same panes and keys as
`sglang-tui HOST`) and Esc comes back, `?` the keys, r/T/K open the view and ask there with its confirm dialog.

What it redraws: only the cells whose words changed. A row's words are made again when its state changed, and
for the time in phase and the ETA once a second while it starts (once a minute once it is up: its cell shows
whole minutes then, and every up row's roll over together, at the clock's minute). One timer keeps the clocks: it fires when the first row's words are due (in a second while
one starts, at the next minute when every row is up), so a board at rest does nothing in between (issue 32).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static

from tui.core.fleet import (
    SORT_COLUMNS,
    UP,
    EntryKind,
    FleetEntry,
    matches,
    sort_key,
)
from tui.core.state import Readiness
from tui.ui import fleet_rows

FLUSH_S = 0.1  # a change is drawn this long after it came (changes in between are drawn together)
TICK_S = 1.0


@dataclass
class BoardSources:
    """What the board reads and opens, built by the command layer (tests pass their own)."""

    entries: Callable[[], list[FleetEntry]]
    """Every row's latest entry, in the order given."""
    changes: Callable[[], AsyncIterator[int]]
    """Called once: the index of each row whose state moved."""
    open_view: Callable[[int], Screen[Any] | None]
    """The row's full view, new each time (None: nothing to open, e.g. a host with no server)."""
    clock: Callable[[], float] = time.time
    read_only: bool = False
    controls: Callable[[int], frozenset[str]] = lambda _index: frozenset(("restart", "terminate", "kill"))
    """What the row's server can be made to do (restart needs its launch command; a Slurm job, nothing here)."""


_KEYS = [k for k, _ in fleet_rows.COLUMNS]


def _bucket_s(entry: FleetEntry) -> float:
    """How often a row's words can change with the clock alone: each second while it starts, each minute once it
    is up (its time in phase in whole minutes) or where there is no server."""
    return 60.0 if entry.state.phase in UP or entry.kind == "nothing" else TICK_S


def _same_phase(before: Readiness, now: Readiness) -> bool:
    """The facts IN PHASE is made of (tui.ui.fleet_rows.in_phase_cell) are the same: only the clock moves it."""
    return (before.phase, before.phase_since, before.connection, before.launched) == (
        now.phase, now.phase_since, now.connection, now.launched
    )  # fmt: skip


_CELL_STYLES = {"failed": "bold red", "stalled": "bold yellow", "cannot": "bold red"}
#: The long cells are cut on the board so that the state before them keeps its room (the server's own view, `/`
#: and `fleet --once` have them whole); NAME is never cut (it stays frozen on the left, as k9s keeps it).
CUT_AT = {"where": 24, "usual": 28, "status": 72}
NARROW = 160  # under this many columns VS USUAL is cut shorter (STATUS is one → away, NAME staying in view)


def cuts_for(width: int) -> dict[str, int]:
    """The cut of each long cell on a terminal this wide."""
    if width >= NARROW:
        return {**CUT_AT, "status": max(CUT_AT["status"], width - 120)}
    return {**CUT_AT, "usual": 20}


#: The sorted column's header: ▲ for the order sort_key gives, ▼ reversed (two cells kept for it on every header,
#: so a re-sort never widens a column).
ARROWS = {False: " ▲", True: " ▼"}


def cut(column: str, text: str, cuts: dict[str, int] = CUT_AT) -> str:
    limit = cuts.get(column)
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def _styled(column: str, text: str, entry: FleetEntry, cuts: dict[str, int] = CUT_AT) -> Text | str:
    """The state in its colour (fleet_rows.row_state), a verdict that needs someone in its; long cells cut."""
    if column == "phase":
        return Text(text, style=fleet_rows.row_state(entry).style)
    text = cut(column, text, cuts)
    if column == "status":
        for start, style in _CELL_STYLES.items():
            if text.startswith(start):
                return Text(text, style=style)
    return text


class FleetApp(App[None]):
    """The board."""

    TITLE = "sglang-tui fleet"
    CSS = """
    #fleet-summary { height: 1; padding: 0 1; background: $panel; }
    #fleet-filter { display: none; height: 3; }
    FleetApp.-filtering #fleet-filter { display: block; }
    #fleet-board { height: 1fr; }
    #fleet-keys { height: 1; padding: 0 1; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "filter", id="fleet-filter"),
        Binding("s", "sort(1)", "sort", id="fleet-sort"),
        Binding("S", "sort(-1)", "reverse", id="fleet-reverse"),
        Binding("question_mark,f1", "help", "keys", id="fleet-help"),
        Binding("r", "row_control('restart')", "restart", id="fleet-restart"),
        Binding("T", "row_control('terminate')", "terminate", id="fleet-terminate"),
        Binding("K", "row_control('kill')", "kill", id="fleet-kill"),
        Binding("escape", "clear_filter", "clear filter", show=False, id="fleet-clear"),
        Binding("q", "quit", "quit", id="fleet-quit"),
    ]

    def __init__(self, sources: BoardSources) -> None:
        super().__init__()
        self.sources = sources
        self.filter_words = ""
        self.sort_column = "order"
        self.reverse = False
        self.order: list[int] = []  # the row indices shown, top first
        self._cells: dict[int, dict[str, str]] = {}
        self._made: dict[int, tuple[Readiness, int]] = {}  # index -> (state, clock bucket) its words were made for
        self._dirty: set[int] = set()
        self._flush_pending = False
        self.redraws = 0  # cells (re)drawn so far: tests and the bench read it
        self._clock: Timer | None = None  # the one timer for the clocks, set for when the next row's words are due
        self._clock_due = float("inf")
        self._summary_shown = ""
        self._keys_shown = ""
        self._headers_for: tuple[str, bool] = ("order", False)
        self._cuts = CUT_AT
        self._rebuild = False  # the next redraw draws every row anew (the cuts changed)

    def compose(self) -> ComposeResult:
        yield Static(id="fleet-summary")
        yield Input(placeholder="filter: words that must appear, !word to leave out (enter: done, esc: clear)",
                    id="fleet-filter")  # fmt: skip
        # NAME frozen on the left: → scrolls the other columns under it (k9s keeps its NAME in view the same way)
        table: DataTable[Any] = DataTable(id="fleet-board", cursor_type="row", zebra_stripes=True, fixed_columns=1)
        self._add_columns(table)
        yield table
        yield Static(self._keys_line(), id="fleet-keys")

    def _add_columns(self, table: DataTable[Any]) -> None:
        """The headers, the sorted one with its arrow (every header keeps the arrow's two cells: no re-layout)."""
        for key, header in fleet_rows.COLUMNS:
            arrow = ARROWS[self.reverse] if key == self.sort_column else "  "
            table.add_column(header + arrow, key=key)
        self._headers_for = (self.sort_column, self.reverse)

    @property
    def table(self) -> DataTable[Any]:
        return self._board.query_one("#fleet-board", DataTable)

    @property
    def _board(self) -> Screen[Any]:
        """The board's own screen (a server's view or the help may be on top)."""
        return self.screen_stack[0]

    def on_mount(self) -> None:
        self._redraw()
        self.table.focus()
        self._follow()

    # ------------------------------------------------------------------------------------------- changes

    @work(exclusive=True, group="fleet-changes", exit_on_error=False)
    async def _follow(self) -> None:
        async for index in self.sources.changes():
            self._dirty.add(index)
            if not self._flush_pending:
                self._flush_pending = True
                self.set_timer(FLUSH_S, self._draw_changes)

    def _draw_changes(self) -> None:
        self._flush_pending = False
        self._redraw()

    @property
    def clock_due(self) -> float:
        """The clock time the clocks' timer fires at next (inf: none is set)."""
        return self._clock_due

    def _clock_fired(self) -> None:
        self._clock, self._clock_due = None, float("inf")
        self._redraw()

    def _keep_time(self, entries: list[FleetEntry], now: float) -> None:
        """The clocks' timer, set for the next bucket of the row whose words are due first."""
        if not entries:
            return
        step = min(_bucket_s(e) for e in entries)
        due = (now // step + 1) * step
        if self._clock is not None and self._clock_due <= due:
            return
        if self._clock is not None:
            self._clock.stop()
        self._clock, self._clock_due = self.set_timer(max(0.05, due - now), self._clock_fired), due

    def _words(self, index: int, entry: FleetEntry, now: float) -> dict[str, str]:
        """The row's words, made again only when its state or its clock bucket moved. Within one bucket a new state
        of the same phase keeps the row's IN PHASE: an up row's minutes roll over at the clocks' timer, every row's
        at once in one repaint, not each with its row's next change (Textual re-renders the whole table for any
        changed cell: 9 repaints a minute at rest with 24 ready rows, issue 32)."""
        bucket = int(now // _bucket_s(entry))
        state, made_bucket = self._made.get(index, (None, -1))
        if index not in self._cells or state is not entry.state or made_bucket != bucket:  # `is`: no deep compare
            cells = fleet_rows.cells(entry, now)
            if state is not None and made_bucket == bucket and _same_phase(state, entry.state):
                cells["in_phase"] = self._cells[index]["in_phase"]
            self._cells[index] = cells
            self._made[index] = (entry.state, bucket)
        return self._cells[index]

    def _redraw(self) -> None:
        """Rows in order (filtered, sorted); a new order rebuilds the table, else only the changed cells."""
        self._dirty.clear()
        if not self.screen_stack:  # a timer that fired as the app closed: its screens are gone, nothing to draw
            return
        now = self.sources.clock()
        entries = self.sources.entries()
        before = {i: dict(self._cells[i]) for i in self.order if i in self._cells}
        words = {i: self._words(i, e, now) for i, e in enumerate(entries)}
        wanted = self.filter_words
        shown = [i for i, e in enumerate(entries) if not wanted or matches(wanted, fleet_rows.haystack(e, words[i]))]
        column = self.sort_column
        shown.sort(
            key=lambda i: sort_key(column, entries[i], now, fleet_rows.eta_s(entries[i], now)), reverse=self.reverse
        )
        table = self.table
        headers = self._headers_for != (self.sort_column, self.reverse)
        if shown != self.order or headers or self._rebuild:
            self._rebuild = False
            selected = self.selected()  # the cursor stays on its server, wherever the new order puts it
            table.clear(columns=headers)
            if headers:
                self._add_columns(table)
            for i in shown:
                table.add_row(*(_styled(k, words[i][k], entries[i], self._cuts) for k in _KEYS), key=str(i))
                self.redraws += len(_KEYS)
            self.order = shown
            if selected in shown:
                table.move_cursor(row=shown.index(selected), animate=False)
        else:
            for i in shown:
                old = before.get(i, {})
                for k in _KEYS:
                    if old.get(k) != words[i][k]:  # a wider text widens its column (a full re-layout): only then
                        wider = len(words[i][k]) > len(old.get(k, ""))
                        table.update_cell(
                            str(i), k, _styled(k, words[i][k], entries[i], self._cuts), update_width=wider
                        )
                        self.redraws += 1
        summary = self._summary(entries)
        if summary.plain != self._summary_shown:  # the same words: no repaint
            self._summary_shown = summary.plain
            self._board.query_one("#fleet-summary", Static).update(summary)
        self._show_keys()
        self._keep_time(entries, now)

    def on_resize(self, event: events.Resize) -> None:
        """Another width cuts the long cells anew: every row drawn again."""
        cuts = cuts_for(event.size.width)
        if cuts != self._cuts:
            self._cuts = cuts
            self._rebuild = True
            if self.order:  # drawn once already (the first size comes before the first rows)
                self._redraw()

    def _summary(self, entries: list[FleetEntry]) -> Text:
        """Each state counted apart (fleet_rows.row_state's buckets): ready and starting always, the rest when any."""
        counts: dict[str, int] = {}
        for entry in entries:
            bucket = fleet_rows.row_state(entry).bucket
            counts[bucket] = counts.get(bucket, 0) + 1
        text = Text(f"{len(entries)} server{'' if len(entries) == 1 else 's'}: ", style="bold")
        said = 0
        for bucket, style in fleet_rows.BUCKETS:
            if counts.get(bucket) or bucket in ("ready", "starting"):
                text.append(" · " if said else "")
                text.append(f"{counts.get(bucket, 0)} {bucket}", style=style)
                said += 1
        sort = "order given" if self.sort_column == "order" else fleet_rows.HEADERS.get(self.sort_column, "")
        text.append(f"   sort: {sort.lower()}{' (reversed)' if self.reverse else ''}", style="dim")
        if self.filter_words:
            text.append(f"   filter: {self.filter_words}  ({len(self.order)} shown)", style="dim")
        return text

    def _keys_line(self) -> str:
        """The keys that apply here: r/T/K only for what the row under the cursor can do."""
        offered = self._offered()
        control = "".join(f"  {key} {verb}" for key, verb in (("r", "restart"), ("T", "terminate"), ("K", "kill"))
                          if verb in offered)  # fmt: skip
        return f"enter open  / filter  s/S sort  ? keys{control}  q quit"

    def _offered(self) -> frozenset[str]:
        """What the row under the cursor can be made to do (nothing under --read-only, or with no rows)."""
        if self.sources.read_only or not self.order:  # (no rows yet: the keys line of compose)
            return frozenset()
        index = self.selected()
        if index is None:
            return frozenset()
        if self.sources.entries()[index].kind != "server":
            return frozenset()
        return self.sources.controls(index)

    def _show_keys(self) -> None:
        line = self._keys_line()
        if line != self._keys_shown:
            self._keys_shown = line
            self._board.query_one("#fleet-keys", Static).update(line)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_keys()

    # ------------------------------------------------------------------------------------------- keys

    def action_filter(self) -> None:
        self.add_class("-filtering")
        box = self._board.query_one("#fleet-filter", Input)
        box.value = self.filter_words
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "fleet-filter":
            self.filter_words = event.value
            self._redraw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "fleet-filter":
            self.remove_class("-filtering")
            self.table.focus()

    def action_clear_filter(self) -> None:
        if self.has_class("-filtering") or self.filter_words:
            self.filter_words = ""
            self._board.query_one("#fleet-filter", Input).value = ""
            self.remove_class("-filtering")
            self.table.focus()
            self._redraw()

    def action_sort(self, step: int) -> None:
        if step < 0:
            self.reverse = not self.reverse
        else:
            at = SORT_COLUMNS.index(self.sort_column) if self.sort_column in SORT_COLUMNS else 0
            self.sort_column = SORT_COLUMNS[(at + 1) % len(SORT_COLUMNS)]
            self.reverse = False
        self._redraw()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        if column in SORT_COLUMNS:
            self.reverse = not self.reverse if column == self.sort_column else False
            self.sort_column = column
            self._redraw()

    def selected(self) -> int | None:
        """The index of the row under the cursor (None: no rows shown)."""
        row = self.table.cursor_row
        return self.order[row] if self.order and 0 <= row < len(self.order) else None

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.open_row(int(str(event.row_key.value)))

    def open_row(self, index: int) -> Screen[Any] | None:
        kind: EntryKind = self.sources.entries()[index].kind
        screen = self.sources.open_view(index)
        if screen is None:
            words = "nothing to open: no server was found there" if kind == "nothing" else "nothing to open yet"
            self.notify(words, severity="warning", timeout=3)
            return None
        self.push_screen(screen)
        return screen

    def _why_not(self, index: int, verb: str) -> str:
        entry = self.sources.entries()[index]
        if entry.kind == "job":
            return f"{entry.name} is a Slurm job: scancel it (sglang-tui stop slurm:JOBID)"
        if entry.kind == "nothing":
            return f"{entry.name}: no server to {verb}"
        if verb == "restart":
            return f'{entry.name}: restart needs its launch command (launch = "…" in its --inventory entry)'
        return f"{entry.name}: its processes cannot be signalled from here"

    def action_help(self) -> None:
        from tui.ui.screens.fleet_help import FleetHelpScreen

        if not isinstance(self.screen, FleetHelpScreen):
            self.push_screen(FleetHelpScreen(self.sources.read_only))

    def action_row_control(self, verb: str) -> None:
        if self.sources.read_only:
            self.notify("read-only: restart, terminate and kill are off", severity="warning", timeout=3)
            return
        index = self.selected()
        if index is None or self.screen is not self.screen_stack[0]:
            return
        if verb not in self._offered():
            self.notify(self._why_not(index, verb), severity="warning", timeout=3)
            return
        screen = self.open_row(index)
        if screen is not None:  # its own key, on its own view: the same confirm dialog, the exact command
            self.call_after_refresh(self.run_action, f"{verb}_server", screen)
