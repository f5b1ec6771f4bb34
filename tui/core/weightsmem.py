"""GPU memory growth while the weights load: the byte signal behind the weights ETA.

Each probe tick during loading_weights adds the mean growth over the server's GPUs since the last snapshot
before loading began. The multi-thread loader finishes shards in bursts, but the bytes it copies to the GPUs
grow steadily, so a rate over this growth holds where the shard count's swings.
"""

from __future__ import annotations

from dataclasses import replace

from tui.core.events import GpuSnapshot
from tui.core.state import WeightsMem

GIB = float(1 << 30)
WINDOW_S = 30.0  # the growth rate is taken over this much recent time
WINDOW_POINTS = 64
MOVE_GIB = 32 / 1024  # less than this is noise, not a sign of loading
MOVES_KEPT = 16


def weights_memory(
    mem: WeightsMem | None, before: GpuSnapshot | None, snap: GpuSnapshot, gpus: frozenset[int] | None, now: float
) -> WeightsMem | None:
    """The growth after one more probe tick; the first tick in the phase takes the baseline."""
    if snap.error is not None or not snap.gpus:
        return mem
    if mem is None:
        base_snap = before if before is not None and before.error is None and before.gpus else snap
        baseline = tuple(
            (g.index, g.used_bytes)
            for g in base_snap.gpus
            if g.used_bytes is not None and (gpus is None or g.index in gpus)
        )
        if not baseline:
            return None
        mem = WeightsMem(baseline=baseline, moved_at=now)
        if base_snap is snap:
            return replace(mem, samples=((now, 0.0),))
    base = dict(mem.baseline)
    grown = [(g.used_bytes - base[g.index]) / GIB for g in snap.gpus if g.used_bytes is not None and g.index in base]
    if not grown:
        return mem
    growth = max(0.0, sum(grown) / len(grown))
    samples = mem.samples + ((now, growth),)
    samples = tuple(p for p in samples if now - p[0] <= WINDOW_S)[-WINDOW_POINTS:] or samples[-1:]
    if len(samples) < 2 and mem.samples:
        samples = (mem.samples[-1], (now, growth))
    moved = growth - mem.peak_gib >= MOVE_GIB
    return replace(
        mem,
        samples=samples,
        moved_at=now if moved else mem.moved_at,
        moves=(mem.moves + (now,))[-MOVES_KEPT:] if moved else mem.moves,
        peak_gib=max(mem.peak_gib, growth),
    )
