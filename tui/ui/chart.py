"""A line chart in text cells with a labelled y axis and a time axis (display only, no decisions).

Each series is drawn with its own marker (the GPU's index) and style; the newest sample is at the right edge,
the x positions follow the samples' times, so a gap in sampling shows as a gap."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.text import Text

from tui.core.fmt import duration

STYLES = ("cyan", "magenta", "green", "yellow", "blue", "red", "bright_cyan", "bright_magenta")


@dataclass(frozen=True)
class Series:
    label: str  # one character: the marker
    values: tuple[float | None, ...]  # aligned to the newest of `times` (the last value is the newest)
    style: str = "cyan"


def chart(
    series: Sequence[Series],
    times: Sequence[float],
    *,
    width: int,
    height: int,
    lo: float,
    hi: float,
    label: Callable[[float], str],
    title: str = "",
    pad: int = 0,
) -> list[Text]:
    """`height` plot rows plus the x axis and its labels; the y axis labels (from `label`) at the top,
    middle and bottom rows, right-aligned in at least `pad` cells. `width` counts the whole line."""
    ys = [label(hi), label((lo + hi) / 2), label(lo)]
    pad = max(pad, *(len(y) for y in ys))
    plot_w = max(width - pad - 2, 4)
    height = max(height, 3)
    grid: list[list[tuple[str, str]]] = [[(" ", "")] * plot_w for _ in range(height)]
    span_t = (times[-1] - times[0]) if len(times) > 1 else 0.0
    newest = times[-1] if times else 0.0

    def column(t: float) -> int:
        if span_t <= 0:
            return plot_w - 1
        return plot_w - 1 - round((newest - t) / span_t * (plot_w - 1))

    for s in series:
        recent = s.values[-len(times) :] if times else ()
        offset = len(times) - len(recent)
        for i, v in enumerate(recent):
            if v is None or hi <= lo:
                continue
            row = height - 1 - round((min(max(v, lo), hi) - lo) / (hi - lo) * (height - 1))
            grid[row][column(times[offset + i])] = (s.label, s.style)
    lines = []
    for r, cells in enumerate(grid):
        y = ys[0] if r == 0 else ys[2] if r == height - 1 else ys[1] if r == (height - 1) // 2 else ""
        line = Text(f"{y:>{pad}} ┤" if y else f"{'':>{pad}} │", style="dim")
        for ch, style in cells:
            line.append(ch, style=style)
        lines.append(line)
    lines.append(Text(f"{'':>{pad}} └" + "─" * plot_w, style="dim"))
    left = f"-{duration(span_t)}" if span_t > 0 else ""
    axis = f"{left}{'now':>{max(plot_w - len(left), 3)}}"
    lines.append(Text(f"{'':>{pad}}  {axis}", style="dim"))
    if title:
        lines.insert(0, Text(title, style="bold"))
    return lines
