"""The GPUs over time, shown under the GPU table while that pane is maximized: memory used (GiB) and
utilisation (%) per GPU, each with a labelled y axis and a time axis, from the state's GPU history.

Drawn only when a new sample arrived, the size changed or it was shown: a clock tick costs nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual.reactive import var
from textual.widgets import Static

from tui.core.fmt import GIB
from tui.core.state import Readiness
from tui.ui.chart import STYLES, Series, chart
from tui.ui.panes.base import StateAt, set_titles
from tui.ui.widgetargs import WidgetArgs

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from 3.11


def _marker(index: int) -> str:
    return str(index) if index < 10 else chr(ord("a") + (index - 10) % 26)


def chart_lines(state: Readiness, width: int, height: int) -> list[object]:
    """The two charts (memory, utilisation) for this state in `width` x `height` cells."""
    times = state.gpu_history_at
    if not times or state.gpus is None or not state.gpus.gpus:
        return ["no GPU samples yet"]
    totals = {g.index: g.total_bytes for g in state.gpus.gpus}
    top = max((t for t in totals.values() if t), default=0) / GIB
    memory = [
        Series(_marker(i), tuple(f * (totals.get(i) or 0) / GIB for f in fractions), STYLES[n % len(STYLES)])
        for n, (i, fractions) in enumerate(state.gpu_history)
    ]  # fmt: skip
    util = [Series(_marker(i), values, STYLES[n % len(STYLES)]) for n, (i, values) in enumerate(state.gpu_util_history)]
    each = max((height - 2) // 2 - 3, 3)  # two charts, each: title, plot rows, axis, labels
    lines: list[object] = []
    lines += chart(memory, times, width=width, height=each, lo=0.0, hi=top or 1.0,
                   label=lambda v: f"{v:.0f} GiB", title="memory used per GPU (marker: GPU index)", pad=7)  # fmt: skip
    if any(v is not None for _, values in state.gpu_util_history for v in values):
        lines += chart(util, times, width=width, height=each, lo=0.0, hi=100.0, label=lambda v: f"{v:.0f}%",
                       title="utilisation per GPU", pad=7)  # fmt: skip
    else:
        lines.append("utilisation: the probe gives none")
    return lines


class GpuChart(Static):
    """Hidden unless the GPU pane is maximized (the app sets `active`); `shown` is the text last drawn."""

    DEFAULT_CSS = """
    GpuChart { display: none; height: 1fr; border: round $panel; border-title-color: $text-muted; padding: 0 1; }
    GpuChart.-shown { display: block; }
    """

    view: var[StateAt] = var(StateAt(Readiness(), 0.0), init=False)
    active: var[bool] = var(False, init=False)

    def __init__(self, **kwargs: Unpack[WidgetArgs]) -> None:
        super().__init__("", **kwargs)
        self._drawn: object = None
        self.shown = ""
        set_titles(self, "GPUs over time", None)

    def watch_view(self) -> None:
        self.redraw()

    def watch_active(self, active: bool) -> None:
        self.set_class(active, "-shown")
        self.redraw()

    def on_resize(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        if not self.active:
            return
        state = self.view.state
        size = (self.content_region.width, self.content_region.height)
        key = (state.gpu_history_at[-1:], state.gpus, size)
        if key == self._drawn or size[0] <= 0:
            return
        self._drawn = key
        lines = chart_lines(state, *size)
        self.shown = "\n".join(line.plain if isinstance(line, Text) else str(line) for line in lines)
        self.update(Group(*lines))  # type: ignore[arg-type]
