"""Map TP ranks to the GPU and PID they run on (pure).

First from the process titles in the probe's process lists (`sglang::scheduler_TP3`,
`sglang::scheduler_DP1_TP3_EP3`: the title is the rank prefix with spaces turned into `_`), then, where no
title matches, from SGLang's placement rule: GPU = base + (pp % pp_per_node) * tp_per_node + tp % tp_per_node.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from tui.core.events import GpuSnapshot
from tui.core.ranklabels import RankKey, rank_key, title_key


def _consistent(rank: RankKey, title: RankKey) -> bool:
    """Same TP (none means TP=1, rank 0) and no contradicting component; a title may carry more components than the label."""
    r, t = dict(rank), dict(title)
    return r.get("TP", 0) == t.get("TP", 0) and all(t[k] == v for k, v in r.items() if k in t)


def _schedulers(snapshot: GpuSnapshot, only: Collection[int] | None) -> dict[int, tuple[RankKey, int, int]]:
    """pid -> (rank key, gpu index, bytes) for each scheduler process (of `only`, when given), on the GPU
    where it holds the most."""
    found: dict[int, tuple[RankKey, int, int]] = {}
    for gpu in snapshot.gpus:
        for proc in gpu.procs:
            key = title_key(proc.name)
            if key is None or (only is not None and proc.pid not in only):
                continue
            used = proc.used_bytes or 0
            if proc.pid not in found or used > found[proc.pid][2]:
                found[proc.pid] = (key, gpu.index, used)
    return found


def _by_title(rank: RankKey, schedulers: dict[int, tuple[RankKey, int, int]]) -> tuple[int, int] | None:
    """(gpu, pid) of the one scheduler whose title is this rank: exact match first, else a unique consistent one."""
    exact = [(gpu, pid) for pid, (key, gpu, _) in schedulers.items() if key == rank]
    if len(exact) == 1:
        return exact[0]
    loose = [(gpu, pid) for pid, (key, gpu, _) in schedulers.items() if _consistent(rank, key)]
    return loose[0] if len(loose) == 1 else None


def placement_gpu(rank: RankKey, tp_size: int | None, gpu_count: int, dp_major: bool) -> int | None:
    """SGLang's launch rule for the local GPU of a rank (base_gpu_id 0, gpu_id_step 1).

    With more TP ranks than GPUs the ranks span nodes: TP11 of TP16 on an 8-GPU node is local GPU 3.
    dp_major: plain data parallelism (each DP replica takes tp_size GPUs) rather than DP attention."""
    parts = dict(rank)
    tp = parts.get("TP", 0)
    if gpu_count <= 0:
        return None
    tp_per_node = min(tp_size, gpu_count) if tp_size and tp_size > 0 else gpu_count
    if dp_major and "DP" in parts:
        return (parts["DP"] * tp_per_node + tp % tp_per_node) % gpu_count  # replica d starts at GPU d * tp
    pp_per_node = max(gpu_count // tp_per_node, 1)
    gpu = (parts.get("PP", 0) % pp_per_node) * tp_per_node + tp % tp_per_node
    return gpu % gpu_count


def map_ranks(
    rank_names: Sequence[str], snapshot: GpuSnapshot, tp_size: int | None, server_pids: Collection[int] | None = None
) -> dict[str, tuple[int | None, int | None]]:
    """rank name ("TP3", "DP1 TP3") -> (gpu index, pid), None where unknown.

    server_pids (the server's own processes, when known) keeps another server's same-titled ranks out."""
    if not snapshot.gpus:
        return {name: (None, None) for name in rank_names}
    keys = {name: rank_key(name) for name in rank_names}
    schedulers = _schedulers(snapshot, set(server_pids) if server_pids else None)
    present = {gpu.index for gpu in snapshot.gpus}
    # TP numbers repeating under different DP labels mean each DP replica has its own TP group (plain DP).
    tps = [dict(k).get("TP") for k in keys.values() if "DP" in dict(k)]
    dp_major = len(tps) != len(set(tps))
    result: dict[str, tuple[int | None, int | None]] = {}
    for name, key in keys.items():
        hit = _by_title(key, schedulers)
        if hit is not None:
            result[name] = hit
            continue
        gpu = placement_gpu(key, tp_size, len(snapshot.gpus), dp_major)
        ordered = sorted(present)
        result[name] = (ordered[gpu] if gpu is not None and gpu < len(ordered) else None, None)
    return result
