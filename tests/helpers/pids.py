"""Whether a process lives, as the tests ask it: /proc/PID/stat says a state other than zombie or dead."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """Running or sleeping (a zombie has ended: only its parent's wait is missing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
