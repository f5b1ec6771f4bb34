"""The simulated clock: starts at the real time t0 and runs `speed` times faster, in every process alike."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class SimClock:
    t0: float
    speed: float

    def elapsed(self) -> float:
        """Simulated seconds since t0."""
        return (time.time() - self.t0) * self.speed

    def now(self) -> float:
        """The simulated epoch time, for log timestamps."""
        return self.t0 + self.elapsed()

    def real(self, sim_seconds: float) -> float:
        """Real seconds that `sim_seconds` of simulated time take."""
        return sim_seconds / self.speed

    def wait_for(self, at: float) -> float:
        """Real seconds from now until `at` simulated seconds after t0 (0 when already past)."""
        return max(self.t0 + at / self.speed - time.time(), 0.0)
