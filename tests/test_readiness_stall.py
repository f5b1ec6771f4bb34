"""The stall rule: no progress on any signal for longer than the phase allows, while the process lives."""

from __future__ import annotations

import pytest

from tui.core.events import BarProgress, GpuInfo, GpuSnapshot, LogActivity, Milestone, ServerProcess, Tick
from tui.core.explain import evidence
from tui.core.find_grace import FIND_GRACE_S
from tui.core.freshness import WATCH_QUIET_S
from tui.core.names import phase_words
from tui.core.readiness import reduce
from tui.core.stall import BEFORE_FIRST_SHARD, limit_for, stall_for
from tui.core.state import Phase, Readiness
from tui.core.vocab import MilestoneKind
from tui.core.wording import verdict_line

GB = 1 << 30


def enter(kind: MilestoneKind, now: float = 0.0, state: Readiness | None = None) -> Readiness:
    return reduce(state or Readiness(), Milestone(kind, rank="TP0"), now)


def ticks(s: Readiness, until: float, start: float, step: float = 10.0) -> Readiness:
    t = start
    while t <= until:
        s = reduce(s, Tick(), t)
        t += step
    return s


def gpus(used_gb: float) -> GpuSnapshot:
    return GpuSnapshot(source="sim", gpus=(GpuInfo(index=0, used_bytes=int(used_gb * GB), total_bytes=140 * GB),))


@pytest.mark.parametrize(
    ("kind", "phase", "limit"),
    [
        ("init_begin", Phase.INIT, 600.0),
        ("kv_alloc", Phase.KV_CACHE, 300.0),
        ("graph_begin", Phase.CUDA_GRAPH, 300.0),
        ("uvicorn_running", Phase.WARMUP, 600.0),
    ],
)
def test_stall_after_the_phase_limit_on_ticks(kind: MilestoneKind, phase: Phase, limit: float) -> None:
    s = enter(kind)
    assert s.phase is phase and limit_for(s) == limit
    s = reduce(s, Tick(), limit)
    assert s.stall is None
    s = reduce(s, Tick(), limit + 1)
    assert s.stall is not None and s.stall.since == 0.0 and s.stall.limit_s == limit
    assert verdict_line(s).startswith(f"stalled in {phase_words(phase)}: no progress on any signal")
    assert any(e.startswith("stall: ") for e in evidence(s))


@pytest.mark.parametrize(
    "progress",
    [
        LogActivity(offset=100, data=b"more"),
        BarProgress("capture", 1, 10, bs=8),
        gpus(30.0),
        Milestone("graph_end", rank="TP1"),
    ],
    ids=["log-bytes", "capture-batch", "gpu-memory", "log-line"],
)
def test_progress_on_any_signal_clears_the_stall(progress: object) -> None:
    s = enter("graph_begin")
    s = reduce(s, BarProgress("capture", 0, 10, bs=16), 0.0)
    s = reduce(s, gpus(20.0), 0.0)
    s = ticks(s, 400.0, 10.0)
    assert s.stall is not None
    s = reduce(s, progress, 401.0)  # type: ignore[arg-type]
    assert s.stall is None and s.last_progress_at == 401.0
    assert not verdict_line(s).startswith("stalled")


def test_small_gpu_memory_noise_is_not_progress() -> None:
    s = reduce(enter("kv_alloc"), gpus(20.0), 0.0)
    s = reduce(s, gpus(20.001), 299.0)
    s = reduce(s, Tick(), 301.0)
    assert s.stall is not None


def test_never_stalled_when_the_process_is_dead() -> None:
    s = reduce(enter("graph_begin"), ServerProcess(alive=True, pids=(1,)), 5.0)
    s = reduce(s, ServerProcess(alive=False), 10.0)
    s = ticks(s, 5000.0, 20.0, step=500.0)
    assert s.phase is Phase.FAILED and s.stall is None
    # and the rule itself refuses, whatever the phase
    assert stall_for(enter("kv_alloc").evolve(process_alive=False), 1e6) is None


def test_a_stall_with_a_live_process_stays_a_stall() -> None:
    s = reduce(enter("kv_alloc"), ServerProcess(alive=True, pids=(1, 2)), 0.0)
    s = reduce(s, Tick(), 1000.0)
    assert s.phase is Phase.KV_CACHE and s.stall is not None


@pytest.mark.parametrize("kind", ["fired_up"])
def test_never_stalled_in_ready_serving_or_failed(kind: MilestoneKind) -> None:
    s = reduce(enter("uvicorn_running"), Milestone(kind), 1.0)
    assert s.phase is Phase.READY
    assert reduce(s, Tick(), 1e6).stall is None
    for phase in (Phase.READY, Phase.SERVING, Phase.FAILED):
        assert stall_for(s.evolve(phase=phase, stall_after=1.0), 1e6) is None


def test_stall_after_overrides_every_phase_limit() -> None:
    s = Readiness().evolve(stall_after=30.0)
    s = enter("init_begin", state=s)
    assert limit_for(s) == 30.0
    assert reduce(s, Tick(), 29.0).stall is None
    assert reduce(s, Tick(), 31.0).stall is not None


def test_loading_weights_limit_before_the_first_shard_allows_a_silent_download() -> None:
    s = enter("load_begin")
    assert limit_for(s) == BEFORE_FIRST_SHARD == 1200.0
    assert reduce(s, Tick(), 1100.0).stall is None
    assert reduce(s, Tick(), 1201.0).stall is not None


def test_loading_weights_limit_adapts_to_the_shard_interval() -> None:
    s = enter("load_begin")
    for d in range(0, 4):  # one shard a minute: limit 10 x 60 s
        s = reduce(s, BarProgress("weights", d, 30), d * 60.0)
    assert limit_for(s) == pytest.approx(600.0)
    assert reduce(s, Tick(), 180.0 + 590.0).stall is None
    assert reduce(s, Tick(), 180.0 + 601.0).stall is not None
    fast = enter("load_begin")
    for d in range(0, 20):  # 4 shards/s: the 3-minute floor applies
        fast = reduce(fast, BarProgress("weights", d, 64), d * 0.25)
    assert limit_for(fast) == 180.0


def test_stall_is_recomputed_on_every_event_not_only_ticks() -> None:
    s = enter("kv_alloc")
    s = reduce(s, ServerProcess(alive=True), 400.0)  # not progress, but the rule runs
    assert s.stall is not None


def test_an_unchanged_stall_stays_equal_between_ticks() -> None:
    s = reduce(enter("kv_alloc"), Tick(), 400.0)
    later = reduce(s, Tick(), 410.0)
    assert later.stall is s.stall and later.stall is not None
    assert later.stall.detail == "last progress: log: kv_alloc"
    assert "no progress on any signal for 6m50s (limit 5m00s in KV cache)" in verdict_line(later)


def test_the_find_holds_the_stall_until_the_watch_reports_after_its_grace() -> None:
    """A launch whose processes the watch has not found: quiet past the budget is not a stall until a report after
    the find's grace says what it is (gone: failed; cannot tell: stalled). A host under load reports late, and
    the hold waits for that report rather than a time of its own (m60: stalled, where the late report said gone)."""
    watched = Readiness.of(process_watched=True, stall_after=5.0)
    s = reduce(enter("graph_begin", 0.0, watched), ServerProcess(alive=False), 2.0)  # not found, in the grace
    assert s.process_alive is None
    late = FIND_GRACE_S + WATCH_QUIET_S - 1.0  # no report since the grace: the one due is late
    s = ticks(s, late, 10.0, step=1.0)
    assert s.stall is None and s.phase is Phase.CUDA_GRAPH
    gone = reduce(s, ServerProcess(alive=False), late + 0.5)
    assert gone.phase is Phase.FAILED and gone.stall is None
    unknown = reduce(reduce(s, ServerProcess(alive=None), late + 0.5), Tick(), late + 1.0)  # a watch that cannot tell
    assert unknown.stall is not None and unknown.phase is Phase.CUDA_GRAPH


def test_a_watch_silent_past_its_grace_no_longer_holds_the_stall() -> None:
    """A watch that never reports again is freshness's to judge (lost after WATCH_QUIET_S): the find's hold ends."""
    s = enter("graph_begin", 0.0, Readiness.of(process_watched=True, stall_after=5.0))
    s = reduce(s, Tick(), FIND_GRACE_S + WATCH_QUIET_S - 1.0)
    assert s.stall is None
    s = reduce(s, Tick(), FIND_GRACE_S + WATCH_QUIET_S + 1.0)
    assert s.stall is not None
