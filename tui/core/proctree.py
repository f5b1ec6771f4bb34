"""The server's process tree (key P, like htop's F5): main → schedulers → detokenizer and any other child.

Pure: built from the process watch's last activity sample (pid, ppid, title, state, CPU, RSS) and the GPU
snapshot's per-process memory. Rows in tree order, each with its depth.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.core.activity import ActivityState
from tui.core.events import GpuInfo


@dataclass(frozen=True)
class ProcRow:
    depth: int  # 0: the server's main process
    pid: int
    name: str
    state: str = ""  # the kernel's state letter ("" unknown)
    cpu_pct: float | None = None  # % of one core between the last two samples (None: one sample so far)
    rss_bytes: int | None = None
    gpu_bytes: int | None = None  # summed over the GPUs it uses (None: on none, or not reported)


def rows(activity: ActivityState | None, gpus: tuple[GpuInfo, ...] = ()) -> list[ProcRow]:
    """The tree, parents before their children, siblings by pid."""
    if activity is None:
        return []
    procs = {p.pid: p for p in activity.procs}
    cpu = dict(activity.cpu_pct)
    gpu: dict[int, int] = {}
    for g in gpus:
        for gp in g.procs:
            if gp.used_bytes is not None:
                gpu[gp.pid] = gpu.get(gp.pid, 0) + gp.used_bytes
    kids: dict[int, list[int]] = {}
    for p in procs.values():
        kids.setdefault(p.ppid, []).append(p.pid)
    out: list[ProcRow] = []

    def walk(pid: int, depth: int) -> None:
        p = procs[pid]
        out.append(ProcRow(depth, pid, p.name, p.state, cpu.get(pid), p.rss_bytes, gpu.get(pid)))
        for child in sorted(kids.get(pid, ())):
            walk(child, depth + 1)

    for root in sorted(pid for pid, p in procs.items() if p.ppid not in procs):
        walk(root, 0)
    return out
