"""Small text drawings for the panes: bars and sparklines, and text made safe to draw (display only, no decisions)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.cells import get_character_cell_size
from rich.text import Text

from tui.core.termtext import UNSAFE, terminal_safe

_EIGHTHS = " ▏▎▍▌▋▊▉"
_SPARKS = "▁▂▃▄▅▆▇█"


def bar(fraction: float | None, width: int) -> str:
    """A horizontal bar `width` cells wide, filled to `fraction` (0..1) with eighth-cell precision."""
    if width <= 0:
        return ""
    if fraction is None:
        return "·" * width
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full
    if full < width:
        text += (_EIGHTHS[part] if part else "") + "░" * (width - full - (1 if part else 0))
    return text


def sparkline(values: Iterable[float | None], width: int, *, lo: float | None = 0.0, hi: float | None = None) -> str:
    """The last `width` values as block characters; None (no sample) is drawn as a space."""
    recent = list(values)[-width:] if width > 0 else []
    known = [v for v in recent if v is not None]
    if not known:
        return " " * len(recent)
    low = min(known) if lo is None else lo
    high = max(known) if hi is None else hi
    span = high - low
    out = []
    for v in recent:
        if v is None:
            out.append(" ")
        elif span <= 0:
            out.append(_SPARKS[-1] if v > 0 else _SPARKS[0])
        else:
            level = round((min(max(v, low), high) - low) / span * (len(_SPARKS) - 1))
            out.append(_SPARKS[level])
    return "".join(out)


def safe_text(text: Text) -> Text:
    """The Text with every character a terminal would obey made a visible mark (tui.core.termtext): the same
    length, so every span keeps its place. Textual passes ESC through to the terminal."""
    if not UNSAFE.search(text.plain):
        return text
    safe = text.copy()
    safe.plain = terminal_safe(text.plain)
    return safe


def wrap_spans(text: str, width: int) -> list[tuple[int, int]]:
    """(start, end) of each row when `text` is wrapped to rows of `width` cells, as the log view draws it (control
    characters one mark each, wide characters two cells, a tab to the next multiple of 8 within its row); joined,
    the rows are `text` exactly. A character wider than `width` gets a row of its own."""
    n = len(text)
    if width <= 0 or n <= width and (text.isascii() and "\t" not in text):
        return [(0, n)]
    if text.isascii() and "\t" not in text:  # one cell per character: plain slices
        return [(s, min(s + width, n)) for s in range(0, n, width)]
    spans: list[tuple[int, int]] = []
    start = col = 0
    for i, ch in enumerate(text):
        cells = 8 - col % 8 if ch == "\t" else 1 if UNSAFE.match(ch) else get_character_cell_size(ch)
        if col + cells > width and i > start:
            spans.append((start, i))
            start, col = i, 0
            cells = 8 if ch == "\t" else cells
        col += cells
    spans.append((start, n))
    return spans
