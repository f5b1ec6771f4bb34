"""GPUs: one row per GPU (any number), its rank, memory bar, util, temperature and power (when the probe has
them), holding process and memory history."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.reactive import var
from textual.widgets import DataTable

from tui.core.events import GpuInfo
from tui.core.fmt import GIB, ago
from tui.core.state import Readiness
from tui.core.termtext import terminal_safe
from tui.ui.panes.base import StateAt, set_titles
from tui.ui.text import bar, sparkline
from tui.ui.widgetargs import WidgetArgs

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from 3.11

STALE_AFTER_S = 5.0
BAR_WIDTH = 14
SPARK_WIDTH = 16
COLUMNS = ("gpu", "rank", "memory", "used / total GiB", "util", "held by", "history")
EXTRA_AT = len(
    COLUMNS
)  # temperature and power, when the probe has them, come last (the other columns keep their place)


def columns_for(gpus: tuple[GpuInfo, ...]) -> tuple[str, ...]:
    """COLUMNS, plus `temp` and `power` where any GPU of the sample has them (NVML; not the simulator)."""
    extra = tuple(name for name, has in (("temp", any(g.temp_c is not None for g in gpus)),
                                         ("power", any(g.power_w is not None for g in gpus))) if has)  # fmt: skip
    return COLUMNS[:EXTRA_AT] + extra + COLUMNS[EXTRA_AT:]


def _extra_cells(gpu: GpuInfo, columns: tuple[str, ...], stale: bool) -> tuple[Text, ...]:
    dim = "dim" if stale else ""
    cells = []
    if "temp" in columns:
        hot = gpu.temp_c is not None and gpu.temp_c >= 85
        cells.append(
            Text(
                f"{gpu.temp_c:>3.0f}°C" if gpu.temp_c is not None else "  N/A",
                style="red" if hot and not stale else dim,
            )
        )
    if "power" in columns:
        cells.append(Text(f"{gpu.power_w:>4.0f} W" if gpu.power_w is not None else "  N/A", style=dim))
    return tuple(cells)


def _gib(n: int | None) -> str:
    return "N/A" if n is None else f"{n / GIB:.1f}"


def rank_cell(ranks: list[str], failed: str | None, stale: bool) -> Text:
    """The GPU's ranks ("TP3"); the rank whose line says why the launch failed marked "TP3 ✗" in red."""
    if failed is None or failed not in ranks:
        return Text(",".join(ranks) or "—", style="dim" if stale else "")
    return Text(f"{','.join(ranks)} ✗", style="bold red")


def _cells(gpu: GpuInfo, ranks: Text, history: tuple[float, ...], stale: bool) -> tuple[Text, ...]:
    dim = "dim" if stale else ""
    fraction = gpu.used_bytes / gpu.total_bytes if gpu.used_bytes is not None and gpu.total_bytes else None
    bar_style = "dim" if stale else ("red" if fraction is not None and fraction > 0.95 else "green")
    drawn = bar(fraction, BAR_WIDTH)
    filled = drawn.rstrip("░")
    memory = Text(filled, style=bar_style)
    memory.append(drawn[len(filled) :], style="dim")
    util = f"{gpu.util_pct:.0f}%" if gpu.util_pct is not None else "N/A"
    if gpu.procs:
        top = max(gpu.procs, key=lambda p: p.used_bytes or 0)
        held = f"{top.pid} {terminal_safe(top.name or '?')}"
        if len(gpu.procs) > 1:
            held += f" +{len(gpu.procs) - 1}"
    else:
        held = "—"
    return (
        Text(f"{gpu.node} {gpu.index}" if gpu.node else str(gpu.index), style="bold " + dim),  # a deployment: by node
        ranks,
        memory,
        Text(f"{_gib(gpu.used_bytes):>6} / {_gib(gpu.total_bytes):<6}", style=dim),
        Text(f"{util:>4}", style=dim),
        Text(held, style=dim, overflow="ellipsis", no_wrap=True),
        # Full width from the first sample (newest at the right): a cell that grows costs a layout pass per sample.
        Text(sparkline(history, SPARK_WIDTH, lo=0.0, hi=1.0).rjust(SPARK_WIDTH), style="dim" if stale else "cyan"),
    )


class GpuPane(DataTable[Text]):
    """Rows are keyed `gpu<index>` and updated cell by cell, only where a value changed."""

    DEFAULT_CSS = """
    GpuPane { height: auto; max-height: 14; border: round $panel; border-title-color: $text-muted; }
    GpuPane:focus { border: round $primary; }
    """

    view: var[StateAt] = var(StateAt(Readiness(), 0.0), init=False)
    """The readiness state and the clock (bound to the app's)."""

    def __init__(self, **kwargs: Unpack[WidgetArgs]) -> None:
        super().__init__(cursor_type="none", zebra_stripes=False, **kwargs)
        self.border_title = "GPUs"
        self._title = "GPUs"
        self._error: str | None = None
        self._shown: dict[str, tuple[Text, ...]] = {}
        self._rows_from: object = None  # what the rows were last built from: same inputs, nothing to compare
        self._widths: tuple[int, ...] = ()  # the column widths the rows were last drawn at

    def hidden_rows(self) -> tuple[int, int]:
        """(rows above the view, rows below it): what a "+N" in the border points to."""
        visible = max(0, self.scrollable_content_region.height - 1)  # the column header row is fixed
        if not self.row_count or not visible or self.row_count <= visible:
            return 0, 0
        top = round(self.scroll_y)
        return top, max(0, self.row_count - top - visible)

    def _show_titles(self) -> None:
        above, below = self.hidden_rows()
        more = []
        if above:
            more.append(f"↑{above}")
        if below:
            more.append(f"+{below} more ↓ (3)")
        note = " ".join(more) or None
        subtitle = " · ".join(p for p in (self._error, note) if p) or None
        set_titles(self, self._title, subtitle)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._show_titles()

    def on_resize(self) -> None:
        self.call_after_refresh(self._show_titles)

    def on_idle(self) -> None:
        """DataTable measures a changed cell's width when idle, but keeps the lines it drew before that at the old
        widths (textual#3533): a restart's empty "held by" column stayed cut to "4300 s…" once its cells were long
        again, until the next sample. When a width moved, the rows are drawn again."""
        widths = tuple(column.content_width for column in self.columns.values())
        if widths != self._widths:
            drawn_before = bool(self._widths)
            self._widths = widths
            if drawn_before:
                self.notify_style_update()  # DataTable's public way to drop the lines it drew, and redraw

    def on_mount(self) -> None:
        self._columns: tuple[str, ...] = COLUMNS
        for name in COLUMNS:
            self.add_column(name, key=name)
        self.redraw()

    def watch_view(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        if not self.columns:
            return
        state, now = self.view
        snapshot = state.gpus
        age = now - state.gpus_at if state.gpus_at is not None else None
        # stale: GPU figures are shown, and old; a probe that never read a GPU (no driver) has nothing to be stale
        never = snapshot is not None and not snapshot.gpus and not state.gpu_history
        stale = (
            not never
            and snapshot is not None
            and (state.connection != "connected" or (age is not None and age > STALE_AFTER_S))
        )
        title = "GPUs"
        if snapshot is not None:
            title += f" ({snapshot.source})"
        if never:
            title += " — never a GPU sample"
        if stale:
            title += f" STALE: last sample {ago(age) if age is not None else 'never'}"
        self._title = title
        self._error = f"probe error: {snapshot.error}" if snapshot is not None and snapshot.error else None
        self._show_titles()
        # A clock tick changes at most the title above; the rows change only with a sample, ranks or staleness.
        # Only what the cells show: a sample's own clock and the history beyond the sparkline never reach them.
        failed = state.error.rank if state.error is not None else None  # which rank failed (tui.core.fold_log)
        rows_from = (
            snapshot.gpus if snapshot is not None else None,
            tuple((index, values[-SPARK_WIDTH:]) for index, values in state.gpu_history),
            state.ranks,
            failed,
            stale,
        )
        if rows_from == self._rows_from:
            return
        self._rows_from = rows_from
        if snapshot is None:
            if not self._shown:
                return
        gpus = snapshot.gpus if snapshot is not None else ()
        ranks_by_gpu: dict[int, list[str]] = {}
        for rank in state.ranks:
            if rank.gpu_index is not None:
                ranks_by_gpu.setdefault(rank.gpu_index, []).append(rank.name)
        history = dict(state.gpu_history)
        columns = columns_for(gpus)
        wanted = {}
        for g in gpus:
            ranks = rank_cell(ranks_by_gpu.get(g.index, []), failed, stale)
            cells = _cells(g, ranks, history.get(g.index, ()), stale)
            wanted[f"gpu{g.index}"] = cells[:EXTRA_AT] + _extra_cells(g, columns, stale) + cells[EXTRA_AT:]
        if columns != self._columns:  # the probe gained (or lost) temperature or power: the columns change once
            self.clear(columns=True)
            self._columns = columns
            for name in columns:
                self.add_column(name, key=name)
            self._shown = {}
        if list(wanted) != list(self._shown):
            self.clear()
            self._shown = {}
            for key, cells in wanted.items():
                self.add_row(*cells, key=key)
                self._shown[key] = cells
            self.call_after_refresh(self._show_titles)
            return
        with self.app.batch_update():
            for key, cells in wanted.items():
                before = self._shown[key]
                for column, old_cell, new_cell in zip(self._columns, before, cells, strict=True):
                    if old_cell != new_cell:
                        # Measuring widths ends in a layout pass of the whole screen: only when the width changed.
                        self.update_cell(key, column, new_cell, update_width=old_cell.cell_len != new_cell.cell_len)
                self._shown[key] = cells
