"""Shared formatting of durations, sizes, rates and ETAs, so every view prints the same figures."""

from __future__ import annotations

import math

GIB = float(1 << 30)


def duration(seconds: float | None) -> str:
    """A duration as "0.4s", "42s", "2m13s" or "1h02m"; "-" when unknown."""
    if seconds is None or math.isnan(seconds):
        return "-"
    s = max(0.0, seconds)
    if s < 9.95:  # 9.96 would print as "10.0s"
        return f"{s:.1f}s"
    whole = int(round(s))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{(whole % 3600) // 60:02d}m"


def gib(gb: float | None) -> str:
    """A size already in GiB (SGLang's "GB" figures are GiB) as "20.1 GiB"; "-" when unknown."""
    if gb is None:
        return "-"
    return f"{gb:.1f} GiB"


def gib_bytes(n: int | None) -> str:
    """A byte count as "20.1 GiB"; "-" when unknown (None is N/A, never 0)."""
    if n is None:
        return "-"
    return gib(n / GIB)


def rate(per_s: float | None, unit: str = "shards") -> str:
    """A rate as "7.1 shards/s" ("0.05 shards/s" when slow); "-" when unknown."""
    if per_s is None or per_s <= 0 or math.isnan(per_s):
        return "-"
    if per_s >= 10:
        text = f"{per_s:.0f}"
    elif per_s >= 0.1:
        text = f"{per_s:.1f}"
    else:
        text = f"{per_s:.2f}"
    return f"{text} {unit}/s"


def eta(seconds: float | None) -> str:
    """Time left as "ETA 1 s", "ETA 42 s" or "ETA 2m13s"; "ETA ?" when unknown."""
    if seconds is None or math.isnan(seconds) or seconds < 0:
        return "ETA ?"
    if seconds < 60:
        return f"ETA {max(1, math.ceil(seconds))} s"
    return f"ETA {duration(seconds)}"


def ago(seconds: float) -> str:
    """How long ago, as "0.4 s ago" or "2m13s ago"."""
    s = max(0.0, seconds)
    if s < 60:
        return f"{s:.1f} s ago" if s < 10 else f"{int(round(s))} s ago"
    return f"{duration(s)} ago"


def clock_of(at: str | None) -> str:
    """The time of day in a log timestamp ("2025-03-08 12:29:04" -> "12:29:04"); "" when unknown."""
    if not at:
        return ""
    return at.rsplit(" ", 1)[-1]
