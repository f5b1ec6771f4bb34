"""STUB (being written): map ranks to GPUs and PIDs."""

from __future__ import annotations

from typing import Sequence

from tui.core.events import GpuSnapshot


def map_ranks(rank_names: Sequence[str], snapshot: GpuSnapshot, tp_size: int | None) -> dict[str, tuple[int | None, int | None]]:
    """rank name ("TP3") -> (gpu index, pid), None where unknown."""
    return {name: (None, None) for name in rank_names}
