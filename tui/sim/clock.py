"""The simulated clock: the schedule runs `speed` times faster than real time, the same in every process,
while everything printed (log timestamps, tqdm times, `elapsed=`) is real time, as a real server's is.

`real0` is the real instant of simulated second 0 of the schedule. It starts at t0 and moves later when the
simulation pauses (while the children start, or while a minimum real delay is served), so that overheads of
the real processes do not eat into the steps that follow at high speeds.

`backdate` (`simulate --backdate S`): what is printed is S seconds behind, and every write sets the log's
mtime as far back (tui.sim.procs.write_all): the log reads as a launch begun S seconds earlier, so a test can
attach to a hang 40 s old without waiting 40 s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class SimClock:
    t0: float
    speed: float
    real0: float = 0.0
    backdate: float = 0.0

    def __post_init__(self) -> None:
        self.real0 = self.real0 or self.t0

    def elapsed(self) -> float:
        """Simulated seconds since the start: where the schedule is."""
        return (time.time() - self.real0) * self.speed

    def now(self) -> float:
        """The real epoch time (less `backdate`), for everything printed: a watcher's rates and ETAs must match the
        wall clock."""
        return time.time() - self.backdate

    def real(self, sim_seconds: float) -> float:
        """Real seconds that `sim_seconds` of simulated time take."""
        return sim_seconds / self.speed

    def wait_for(self, at: float) -> float:
        """Real seconds from now until `at` simulated seconds after the start (0 when already past)."""
        return max(self.real0 + at / self.speed - time.time(), 0.0)

    def resume_at(self, at: float) -> None:
        """Make simulated second `at` be now (the clock stood still since it last showed `at`)."""
        self.real0 = time.time() - at / self.speed

    def pause(self, real_seconds: float) -> None:
        """Let real_seconds pass without simulated time passing."""
        self.real0 += real_seconds
