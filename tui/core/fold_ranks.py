"""Rank bookkeeping: each rank's last milestone and memory, which ranks printed which milestone, and the ranks mapped to GPUs and pids."""

from __future__ import annotations

from dataclasses import replace

from tui.core import ranks as rank_map
from tui.core.events import (
    GpuSnapshot,
    Milestone,
)
from tui.core.ranklabels import sort_key
from tui.core.state import (
    RankState,
    Readiness,
)


def update_rank(ranks: tuple[RankState, ...], name: str, ev: Milestone, now: float) -> tuple[RankState, ...]:
    old = next((r for r in ranks if r.name == name), None) or RankState(name=name)
    avail = ev.get("avail_mem_gb")
    usage = ev.get("mem_usage_gb")
    new = replace(
        old,
        last_milestone=f"draft {ev.kind}" if ev.draft else ev.kind,
        avail_mem_gb=float(avail) if isinstance(avail, (int, float)) else old.avail_mem_gb,
        mem_usage_gb=float(usage) if isinstance(usage, (int, float)) else old.mem_usage_gb,
        updated_at=now,
    )
    others = tuple(r for r in ranks if r.name != name)
    return tuple(sorted(others + (new,), key=lambda r: sort_key(r.name)))


def add_rank(
    table: tuple[tuple[str, tuple[str, ...]], ...], kind: str, rank: str | None
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    for i, (k, names) in enumerate(table):
        if k == kind:
            if rank is None or rank in names:
                return table
            return table[:i] + ((k, names + (rank,)),) + table[i + 1 :]
    return table + ((kind, (rank,) if rank else ()),)


def map_ranks(s: Readiness, snapshot: GpuSnapshot) -> tuple[RankState, ...]:
    names = [r.name for r in s.ranks]
    tp = s.server.tp_size
    if tp and tp > 1:
        names += [f"TP{i}" for i in range(tp) if f"TP{i}" not in names]
    try:
        # The server's own pids keep another server's same-titled ranks (a bystander) out of the match.
        mapping = rank_map.map_ranks(names, snapshot, tp, server_pids=s.process_pids or None)
    except Exception:  # a mapping bug must never take the model down; ranks stay unmapped
        return s.ranks
    by_name = {r.name: r for r in s.ranks}
    for name, (gpu, pid) in mapping.items():
        old = by_name.get(name)
        if old is None and gpu is None and pid is None:
            continue
        base = old or RankState(name=name)
        if base.gpu_index != gpu or base.pid != pid:
            by_name[name] = replace(base, gpu_index=gpu, pid=pid)
    if all(by_name.get(r.name) is r for r in s.ranks) and len(by_name) == len(s.ranks):
        return s.ranks
    return tuple(sorted(by_name.values(), key=lambda r: sort_key(r.name)))
