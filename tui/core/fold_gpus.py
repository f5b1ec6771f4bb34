"""GPU snapshots: the latest, bounded histories of memory and utilisation, memory moving as progress, and the weights' byte growth."""

from __future__ import annotations

from tui.core import clocks
from tui.core.events import (
    GpuSnapshot,
)
from tui.core.fold_ranks import map_ranks
from tui.core.state import (
    Facts,
    Phase,
    Readiness,
)
from tui.core.weightsmem import weights_memory

GPU_HISTORY = 120


GPU_CHANGE_BYTES = 32 << 20  # less than this is noise, not a sign of loading


def on_gpus(s: Readiness, ev: GpuSnapshot, now: float) -> Readiness:
    if ev.error is not None or not ev.gpus:
        return s.evolve(gpus=ev, gpus_at=now)
    changes: Facts = {"gpus": ev, "gpus_at": now, "gpu_history": gpu_history(s.gpu_history, ev)}
    changes["gpu_util_history"] = gpu_util_history(s.gpu_util_history, ev)
    changes["gpu_history_at"] = (s.gpu_history_at + (now,))[-GPU_HISTORY:]
    if memory_moved(s.gpus, ev):
        changes["last_progress_at"] = now
        changes["last_progress"] = "GPU memory"
        changes["last_progress_logged"] = False
        changes["last_progress_log"] = None
    if s.phase is Phase.LOADING_WEIGHTS and (s.weights_mem is not None or loading_began_in_view(s)):
        changes["weights_mem"] = weights_memory(s.weights_mem, s.gpus, ev, server_gpus(s), now)
    s = s.evolve(**changes)
    return s.evolve(ranks=map_ranks(s, ev))


def loading_began_in_view(s: Readiness) -> bool:
    """The weights began to load while we watched: the GPU memory before them is known. Attached mid-load (the
    log says the phase began before our first event), growth from now would count only part of the weights. The
    phase's stamp is whole seconds: a line written in the second we attached began in view."""
    return s.first_seen_at is None or s.phase_since + clocks.STAMP_S >= s.first_seen_at


def server_gpus(s: Readiness) -> frozenset[int] | None:
    """The GPUs the server's ranks run on, when the ranks are mapped; None: every GPU of the probe."""
    found = frozenset(r.gpu_index for r in s.ranks if r.gpu_index is not None)
    return found or None


def memory_moved(old: GpuSnapshot | None, new: GpuSnapshot) -> bool:
    if old is None or old.error is not None:
        return False
    before = {g.index: g.used_bytes for g in old.gpus}
    for g in new.gpus:
        prev = before.get(g.index)
        if prev is not None and g.used_bytes is not None and abs(g.used_bytes - prev) >= GPU_CHANGE_BYTES:
            return True
    return False


def gpu_history(
    history: tuple[tuple[int, tuple[float, ...]], ...], snap: GpuSnapshot
) -> tuple[tuple[int, tuple[float, ...]], ...]:
    table = dict(history)
    for g in snap.gpus:
        if g.used_bytes is None or not g.total_bytes:
            continue
        table[g.index] = (table.get(g.index, ()) + (g.used_bytes / g.total_bytes,))[-GPU_HISTORY:]
    return tuple(sorted(table.items()))


def gpu_util_history(
    history: tuple[tuple[int, tuple[float | None, ...]], ...], snap: GpuSnapshot
) -> tuple[tuple[int, tuple[float | None, ...]], ...]:
    """Each GPU's recent utilisation (%), one value per sample (None where the probe had none), bounded."""
    table = dict(history)
    for g in snap.gpus:
        table[g.index] = (table.get(g.index, ()) + (g.util_pct,))[-GPU_HISTORY:]
    return tuple(sorted(table.items()))
