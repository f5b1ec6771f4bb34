"""GPU snapshots in the readiness model: stored, bounded history, ranks mapped through tui.core.ranks.map_ranks."""

from __future__ import annotations

import pytest

from tui.core import ranks as ranks_module
from tui.core.events import GpuInfo, GpuProcess, GpuSnapshot, Milestone, ServerArgs
from tui.core.readiness import GPU_HISTORY, reduce
from tui.core.state import Readiness

GB = 1 << 30


def snapshot(used_gb: float, n: int = 2, pid0: int = 4000) -> GpuSnapshot:
    return GpuSnapshot(
        source="sim",
        gpus=tuple(
            GpuInfo(
                index=i,
                uuid=f"GPU-{i}",
                used_bytes=int(used_gb * GB),
                total_bytes=140 * GB,
                procs=(GpuProcess(pid=pid0 + i, used_bytes=int(used_gb * GB), name=f"sglang::scheduler_TP{i}"),),
            )
            for i in range(n)
        ),
    )


def test_snapshots_are_stored_with_a_bounded_used_fraction_history() -> None:
    s = Readiness()
    for i in range(GPU_HISTORY + 30):
        s = reduce(s, snapshot(14.0 * (i % 10)), float(i))
    assert s.gpus is not None and s.gpus_at == float(GPU_HISTORY + 29)
    history = dict(s.gpu_history)
    assert sorted(history) == [0, 1]
    assert len(history[0]) == GPU_HISTORY
    assert history[0][-1] == pytest.approx((14.0 * ((GPU_HISTORY + 29) % 10)) / 140.0)


def test_na_memory_is_not_history_and_an_error_snapshot_keeps_the_history() -> None:
    s = reduce(Readiness(), snapshot(70.0), 1.0)
    s = reduce(s, GpuSnapshot(source="nvml", gpus=(GpuInfo(index=0, used_bytes=None, total_bytes=None),)), 2.0)
    assert len(dict(s.gpu_history)[0]) == 1
    s = reduce(s, GpuSnapshot(source="nvml", error="NVML: driver not loaded"), 3.0)
    assert s.gpus is not None and s.gpus.error == "NVML: driver not loaded"
    assert dict(s.gpu_history)[0] == (0.5,)


def test_ranks_take_what_map_ranks_says() -> None:
    s = reduce(Readiness(), ServerArgs(tp_size=2), 0.0)
    s = reduce(s, Milestone("load_begin", rank="TP0"), 1.0)
    snap = snapshot(20.0)
    s = reduce(s, snap, 2.0)
    expected = ranks_module.map_ranks(["TP0", "TP1"], snap, 2)  # the real mapper, whatever it decides
    got = {r.name: (r.gpu_index, r.pid) for r in s.ranks}
    for name, where in expected.items():
        if where != (None, None) or name in got:
            assert got[name] == where


def test_reducer_fills_gpu_index_and_pid_from_the_mapper(monkeypatch: pytest.MonkeyPatch) -> None:
    """Substitute mapper (named as such): checks the wiring independently of the real matching rules."""
    calls: list[tuple[list[str], int | None]] = []

    def substitute(names, snap, tp_size, server_pids=None):
        calls.append((list(names), tp_size))
        return {name: (int(name[2:]), 4000 + int(name[2:])) for name in names}

    monkeypatch.setattr(ranks_module, "map_ranks", substitute)
    s = reduce(Readiness(), ServerArgs(tp_size=2), 0.0)
    s = reduce(s, Milestone("load_begin", rank="TP1"), 1.0)
    s = reduce(s, snapshot(20.0), 2.0)
    assert calls == [(["TP1", "TP0"], 2)]
    assert [(r.name, r.gpu_index, r.pid) for r in s.ranks] == [("TP0", 0, 4000), ("TP1", 1, 4001)]
    assert s.ranks[1].last_milestone == "load_begin"  # the log's facts stay


def test_a_failing_mapper_never_takes_the_model_down(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(names, snap, tp_size):
        raise ValueError("bad snapshot")

    monkeypatch.setattr(ranks_module, "map_ranks", broken)
    s = reduce(reduce(Readiness(), Milestone("load_begin", rank="TP0"), 1.0), snapshot(20.0), 2.0)
    assert s.gpus is not None and [r.gpu_index for r in s.ranks] == [None]


def test_a_bystander_with_the_same_title_does_not_hide_the_ranks_pid() -> None:
    from tui.core.events import ServerProcess

    bystander = GpuProcess(pid=9999, used_bytes=GB, name="sglang::scheduler_TP0")
    base = snapshot(20.0)
    gpu0 = base.gpus[0]
    crowded = GpuSnapshot(
        source="sim",
        gpus=(
            GpuInfo(
                index=0,
                uuid=gpu0.uuid,
                used_bytes=gpu0.used_bytes,
                total_bytes=gpu0.total_bytes,
                procs=gpu0.procs + (bystander,),
            ),
            base.gpus[1],
        ),
    )
    s = reduce(Readiness(), ServerArgs(tp_size=2), 0.0)
    s = reduce(s, ServerProcess(alive=True, pids=(3999, 4000, 4001)), 1.0)
    s = reduce(s, crowded, 2.0)
    by_name = {r.name: r for r in s.ranks}
    assert (by_name["TP0"].gpu_index, by_name["TP0"].pid) == (0, 4000)
    assert (by_name["TP1"].gpu_index, by_name["TP1"].pid) == (1, 4001)
