"""tqdm progress-bar frames rendered byte for byte as tqdm 4.x writes them to a non-TTY stream."""

from __future__ import annotations

from dataclasses import dataclass

# tqdm's unicode charset: a space then the eight partial blocks ending in a full block.
_BLOCKS = " " + "".join(chr(c) for c in range(0x258F, 0x2587, -1))
_BAR_WIDTH = 10  # tqdm's bar width when the stream is not a terminal (ncols unknown)

WEIGHTS_FORMAT = "{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"


def format_interval(seconds: float) -> str:
    """tqdm.format_interval: MM:SS, or H:MM:SS past an hour."""
    mins, s = divmod(int(seconds), 60)
    h, m = divmod(mins, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _rate_fmt(n: int, elapsed: float) -> str:
    rate = n / elapsed if elapsed > 0 and n else None
    if not rate:
        return "?it/s"
    if 1 / rate > 1:
        return f"{1 / rate:5.2f}s/it"
    return f"{rate:5.2f}it/s"


def _remaining(n: int, total: int, elapsed: float) -> str:
    if not n or elapsed <= 0:
        return "?"
    return format_interval((total - n) * elapsed / n)


def _bar(frac: float) -> str:
    nsyms = len(_BLOCKS) - 1
    full, part = divmod(int(frac * _BAR_WIDTH * nsyms), nsyms)
    text = _BLOCKS[-1] * full
    if full < _BAR_WIDTH:
        text += _BLOCKS[part] + _BLOCKS[0] * (_BAR_WIDTH - full - 1)
    return text


def frame(n: int, total: int, elapsed: float, desc: str = "", bar_format: str | None = None) -> str:
    """One frame of a bar (without the leading \\r), like tqdm.format_meter."""
    pct = 100.0 * n / total if total else 0.0
    elapsed_s = format_interval(elapsed)
    rate = _rate_fmt(n, elapsed)
    remaining = _remaining(n, total, elapsed)
    if bar_format is not None:
        return bar_format.format(
            desc=desc, percentage=pct, n_fmt=n, total_fmt=total, elapsed=elapsed_s, remaining=remaining, rate_fmt=rate
        )
    left = f"{desc}: " if desc else ""
    return f"{left}{pct:3.0f}%|{_bar(n / total if total else 0.0)}| {n}/{total} [{elapsed_s}<{remaining}, {rate}]"


@dataclass
class BarWriter:
    """Renders successive frames of one bar as the bytes tqdm writes: `\\r` + frame + padding.

    tqdm pads a frame with spaces when it is shorter than the previous one so the terminal line is cleared;
    the same spaces land in a redirected log, so they are reproduced.
    """

    last_len: int = 0

    def write(self, text: str) -> str:
        pad = " " * max(self.last_len - len(text), 0)
        self.last_len = len(text)
        return "\r" + text + pad
