"""Progress bars as the readiness model keeps them: max done seen, a recent window of samples, rate and ETA."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

from tui.core.state import BarState

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from 3.11

WINDOW_S = 30.0  # the rate is smoothed over this much recent time
WINDOW_POINTS = 32  # and over at most this many points


class BarWords(TypedDict, total=False):
    """What a frame says of its bar beside the count (BarState's fields of the same names); none given: kept."""

    bs: int | None
    avail_mem_gb: float | None
    label: str
    zero_at: float | None


def start_bar(done: int, total: int, when: float, clock: str, at: float, **extra: Unpack[BarWords]) -> BarState:
    """A bar seen for the first time (or restarted): sampled at `when` on its own axis, at `at` on our clock."""
    done = max(0, min(done, total)) if total > 0 else max(0, done)
    return BarState(
        done=done,
        total=total,
        started_at=at,
        updated_at=at,
        samples=((when, done),),
        sample_clock=clock,
        **extra,
    )


def advance_bar(bar: BarState, done: int, when: float, clock: str, at: float, **extra: Unpack[BarWords]) -> BarState:
    """A new frame of the same bar: keep the max done seen, add a sample when it moved, refresh rate and ETA.
    `at`: when the frame was printed, on our clock (tui.core.clocks): the ETA decays with the silence since."""
    done = min(done, bar.total) if bar.total > 0 else done
    if done <= bar.done:
        return replace(bar, **extra) if extra else bar
    samples = bar.samples if clock == bar.sample_clock else ()
    samples = _trim(samples + ((when, done),))
    rate = window_rate(samples)
    left = bar.total - done
    eta = left / rate if rate and left >= 0 else None
    return replace(
        bar,
        done=done,
        updated_at=max(at, bar.updated_at),
        samples=samples,
        sample_clock=clock,
        rate_per_s=rate if rate is not None else bar.rate_per_s,
        eta_s=eta if rate is not None else bar.eta_s,
        **extra,
    )


def window_rate(samples: tuple[tuple[float, int], ...]) -> float | None:
    """Items per second over the window; None when it spans no time."""
    if len(samples) < 2:
        return None
    (t0, d0), (t1, d1) = samples[0], samples[-1]
    if t1 <= t0 or d1 <= d0:
        return None
    return (d1 - d0) / (t1 - t0)


def mean_interval(bar: BarState | None) -> float | None:
    """Mean seconds per item over the recent window (the stall rule scales with it); None when unknown."""
    if bar is None:
        return None
    rate = window_rate(bar.samples)
    return 1.0 / rate if rate else None


def is_complete(bar: BarState | None) -> bool:
    return bar is not None and bar.total > 0 and bar.done >= bar.total


def _trim(samples: tuple[tuple[float, int], ...]) -> tuple[tuple[float, int], ...]:
    latest = samples[-1][0]
    kept = tuple(s for s in samples if latest - s[0] <= WINDOW_S)
    if len(kept) < 2 and len(samples) >= 2:
        kept = samples[-2:]  # one slow item: the rate over the last interval beats none
    return kept[-WINDOW_POINTS:]
