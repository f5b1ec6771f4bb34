"""Past launches of the same key, as a frozen value the caller loads from the history store and hands to the
core (`Readiness.past`). The core never reads the store: it only sees this value.

A row is only as good as the file it came from (another tool, a hand edit, a bad disk): `past_launch` takes the
row's raw values and keeps it only when every figure is one a launch can have; else the row is left out of the
ETA and named (`Past.skipped`), so an odd row can never turn into a verdict, a crash or "-0.0× slower"."""

from __future__ import annotations

import math

from tui.core.record import Record, record

MAX_SECONDS = 7 * 86400.0  # a phase (or a whole launch) longer than a week is not a startup: an odd row
MAX_WEIGHT_GIB = 4096.0  # per rank: no GPU holds more than a few hundred GiB
MAX_SHARDS = 1_000_000
MIN_LAUNCHES = 2  # a median (an ETA, a ratio, a stall budget) rests on at least this many launches: one is an anecdote


class OddRow(ValueError):
    """A history row with a figure no launch can have; str() names the figure."""


def _median(values: list[float] | tuple[float, ...]) -> float:
    """The median (statistics.median without importing statistics: replay's start-up stays light)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


@record
class PastLaunch(Record):
    """One earlier launch that reached ready: main-phase durations (seconds) and what it loaded."""

    launch_id: int
    total_s: float | None = None  # first phase start to ready
    phases: tuple[tuple[str, float], ...] = ()  # (phase value, seconds), main spans, in order
    weight_gib_per_rank: float | None = None  # GPU memory each rank's weights took (mean over the GPUs)
    shards: int | None = None

    def phase_s(self, phase: str) -> float | None:
        found = [d for p, d in self.phases if p == phase]
        return sum(found) if found else None


def seconds(name: str, value: object) -> float:
    """A duration from the history: a finite number of seconds, 0 to MAX_SECONDS; else OddRow naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OddRow(f"{name} {value!r:.40} is not a number")
    if not math.isfinite(value) or not 0.0 <= value <= MAX_SECONDS:
        raise OddRow(f"{name} {value:g} s is not a duration")
    return float(value)


def _optional(name: str, value: object, low: float, high: float, *, whole: bool = False) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (whole and not isinstance(value, int)):
        raise OddRow(f"{name} {value!r:.40} is not a {'whole ' if whole else ''}number")
    if not math.isfinite(value) or not low <= value <= high:
        raise OddRow(f"{name} {value:g} is out of range")
    return value


def past_launch(
    launch_id: int, total: object, phases: list[tuple[object, object]], weight: object, shards: object
) -> PastLaunch:
    """One history row (its raw values) as a PastLaunch; OddRow when a figure is none a launch can have."""
    kept = tuple((str(phase), seconds(str(phase), d)) for phase, d in phases)
    return PastLaunch(
        launch_id,
        seconds("total", total) if total is not None else None,
        kept,
        _optional("weight_gib_per_rank", weight, 0.0, MAX_WEIGHT_GIB),
        int(found) if (found := _optional("shards", shards, 0, MAX_SHARDS, whole=True)) is not None else None,
    )


def odd_rows(skipped: tuple[str, ...], most: int = 3) -> str:
    """ "2 odd rows (launch 7: total -100 s is not a duration; launch 9: …)" """
    count = len(skipped)
    named = "; ".join(skipped[:most]) + (f"; {count - most} more" if count > most else "")
    return f"{count} odd row{'s' if count > 1 else ''} ({named})"


@record
class Past(Record):
    """The ready launches of one key, newest first (at most a handful), and the rows left out as odd."""

    key: str
    launches: tuple[PastLaunch, ...] = ()
    skipped: tuple[str, ...] = ()  # the odd rows left out: "launch 7: loading_weights 1e+308 s is not a duration"
    attach_timed: int = 0  # launches of an older sglang-tui whose phases without log stamps were left out

    def skipped_words(self) -> str | None:
        """One line naming the rows (or phases) left out of the ETA, or None when none was."""
        parts = [odd_rows(self.skipped)] if self.skipped else []
        if self.attach_timed:
            n = self.attach_timed
            parts.append(
                f"{n} launch{'es' if n > 1 else ''} recorded by an older sglang-tui with phases timed by its look,"
                " not by the log"
            )
        return f"left out of the ETA: {'; '.join(parts)}" if parts else None

    @property
    def count(self) -> int:
        return len(self.launches)

    def durations(self, phase: str) -> tuple[float, ...]:
        return tuple(d for d in (launch.phase_s(phase) for launch in self.launches) if d is not None)

    def median(self, phase: str) -> float | None:
        """The phase's median over the launches that timed it on the log's clock; None under MIN_LAUNCHES."""
        found = self.durations(phase)
        return _median(found) if len(found) >= MIN_LAUNCHES else None

    def totals(self) -> tuple[float, ...]:
        return tuple(launch.total_s for launch in self.launches if launch.total_s is not None)

    def weight_gib_per_rank(self) -> float | None:
        found = [launch.weight_gib_per_rank for launch in self.launches if launch.weight_gib_per_rank]
        return _median(found) if found else None
