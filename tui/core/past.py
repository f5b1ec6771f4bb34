"""Past launches of the same key, as a frozen value the caller loads from the history store and hands to the
core (`Readiness.past`). The core never reads the store: it only sees this value."""

from __future__ import annotations

from dataclasses import dataclass


def _median(values: list[float] | tuple[float, ...]) -> float:
    """The median (statistics.median without importing statistics: replay's start-up stays light)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


@dataclass(frozen=True)
class PastLaunch:
    """One earlier launch that reached ready: main-phase durations (seconds) and what it loaded."""

    launch_id: int
    total_s: float | None = None  # first phase start to ready
    phases: tuple[tuple[str, float], ...] = ()  # (phase value, seconds), main spans, in order
    weight_gib_per_rank: float | None = None  # GPU memory each rank's weights took (mean over the GPUs)
    shards: int | None = None

    def phase_s(self, phase: str) -> float | None:
        found = [d for p, d in self.phases if p == phase]
        return sum(found) if found else None


@dataclass(frozen=True)
class Past:
    """The ready launches of one key, newest first (at most a handful)."""

    key: str
    launches: tuple[PastLaunch, ...] = ()

    @property
    def count(self) -> int:
        return len(self.launches)

    def durations(self, phase: str) -> tuple[float, ...]:
        return tuple(d for d in (launch.phase_s(phase) for launch in self.launches) if d is not None)

    def median(self, phase: str) -> float | None:
        found = self.durations(phase)
        return _median(found) if found else None

    def totals(self) -> tuple[float, ...]:
        return tuple(launch.total_s for launch in self.launches if launch.total_s is not None)

    def weight_gib_per_rank(self) -> float | None:
        found = [launch.weight_gib_per_rank for launch in self.launches if launch.weight_gib_per_rank]
        return _median(found) if found else None
