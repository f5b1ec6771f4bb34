"""Whether a process lives, as the tests ask it: the simulator's own reading of /proc/PID/stat
(tui/sim/forkserver.start_ticks), which says None for a process gone or a zombie."""

from __future__ import annotations

from tui.sim.forkserver import start_ticks


def alive(pid: int) -> bool:
    """Running or sleeping (a zombie has ended: only its parent's wait is missing)."""
    return start_ticks(pid) is not None
