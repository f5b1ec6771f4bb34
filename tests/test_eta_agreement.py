"""One ETA rule (issue 26 item 14): the header's "ready in", the reason's and `wait`'s bar ETA and the JSON `eta`
never contradict each other: a faster history does not shorten what this launch's own progress says is left,
and during capture the live batch rate counts beside the history. Pure."""

from __future__ import annotations

from tests.test_eta import PHASES, T0, past
from tests.test_readiness_phases import at, feed, ranks
from tui.commands.wait import progress_line
from tui.core import fmt
from tui.core.eta import estimate, eta_words, pace
from tui.core.events import BarProgress, GpuInfo, GpuSnapshot, ServerArgs
from tui.core.readiness import reduce
from tui.core.report import to_json
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line

LATER = sum(d for p, d in PHASES if p in ("kv_cache", "cuda_graph", "warmup"))  # 36 s after the weights


def slow_load(history_scale: float) -> Readiness:
    """Weights at one shard per 4 s, 4/16 done at second 20: the shards say 48 s are left. The history's weights
    took 64 s x history_scale."""
    s = feed([ServerArgs(model="m", tp_size=2, **at(0))] + ranks("init_begin", 2) + ranks("load_begin", 4))
    scale = (history_scale, history_scale, history_scale)
    s = s.evolve(past=past(scale=scale))
    for d in range(5):
        sec = 4 + 4 * d
        s = reduce(s, BarProgress("weights", d, 16, at=at(sec)["at"], t=T0 + sec, elapsed_s=4.0 * d), T0 + sec)
    return s


def test_a_faster_history_never_shortens_what_the_shards_say_is_left() -> None:
    s = slow_load(history_scale=0.4)  # the history's weights took 25.6 s; this launch's shards need 48 s more
    now = s.updated_at
    e = estimate(s, now)
    left, silent = pace(s, s.shards, now)  # type: ignore[arg-type]
    assert silent is None and left is not None and abs(left - 48.0) < 1.0
    assert e.phase_left_s == left and e.ready_in_s is not None
    assert e.ready_in_s >= left  # "ready in ~8s" beside "ETA 48 s" was the bug
    assert abs(e.ready_in_s - (left + LATER * 0.4)) < 1.0
    shown = fmt.eta(left)
    assert shown in verdict_line(s), verdict_line(
        s
    )  # the reason's shard ETA is the phase's, the one "ready in" rests on
    assert shown in progress_line(s, 20.0)  # and `wait`'s line says the same
    assert f"ready in ~{fmt.duration(e.ready_in_s)}" in eta_words(e)
    assert to_json(s)["eta"]["phase_left_s"] == round(left, 1)


def test_a_slower_history_does_not_lengthen_it_either() -> None:
    s = slow_load(history_scale=3.0)  # the history's weights took 192 s; the shards still say 48 s
    e = estimate(s, s.updated_at)
    assert e.phase_left_s is not None and abs(e.phase_left_s - 48.0) < 1.0


def capture(bar_every: float, history: float = 1.0) -> Readiness:
    """Into capture at second 62 (30 s median); a 20-batch bar, one batch per `bar_every` s, 4 done at second 70."""
    s = feed([ServerArgs(model="m", tp_size=2, **at(0))] + ranks("init_begin", 2) + ranks("load_begin", 4)
             + ranks("load_end", 60) + ranks("kv_alloc", 61) + ranks("graph_begin", 62))  # fmt: skip
    s = s.evolve(past=past(scale=(history, history, history)))
    for d in range(5):
        sec = 70 - bar_every * (4 - d)
        s = reduce(s, BarProgress("capture", d, 20, bs=20 - d, elapsed_s=bar_every * d), T0 + sec)
    return s


def test_capture_counts_the_live_batch_rate_beside_the_history() -> None:
    slow = capture(bar_every=2.0)  # 16 batches x 2 s = 32 s left on this bar; the median leaves 30 - 8 = 22 s
    assert slow.phase is Phase.CUDA_GRAPH
    e = estimate(slow, slow.updated_at)
    bar_left_s, _ = pace(slow, slow.capture, slow.updated_at)  # type: ignore[arg-type]
    assert bar_left_s is not None and abs(bar_left_s - 32.0) < 1.0
    assert e.phase_left_s is not None and abs(e.phase_left_s - 32.0) < 1.0  # not the history's 22 s
    assert e.ready_in_s is not None and e.ready_in_s >= bar_left_s
    assert fmt.eta(bar_left_s) in verdict_line(slow)


def test_a_fast_capture_bar_leaves_the_phase_at_least_its_median() -> None:
    fast = capture(bar_every=0.25)  # this bar ends in 4 s; other graphs follow it: the median leaves 22 s
    e = estimate(fast, fast.updated_at)
    bar_left_s, _ = pace(fast, fast.capture, fast.updated_at)  # type: ignore[arg-type]
    assert bar_left_s is not None and bar_left_s < 5.0
    assert e.phase_left_s is not None and abs(e.phase_left_s - 22.0) < 1.0
    assert e.ready_in_s is not None and e.ready_in_s >= bar_left_s


def test_the_gpu_memory_eta_is_the_one_beside_the_shards() -> None:
    """While GPU memory decides the weights' rest, the reason's ETA beside the shard count is that figure."""
    gib = 1 << 30

    def snap(used_gib: float) -> GpuSnapshot:
        return GpuSnapshot(
            "sim", tuple(GpuInfo(i, used_bytes=int(used_gib * gib), total_bytes=140 * gib) for i in (0, 1))
        )

    s = feed([ServerArgs(model="m", tp_size=2, **at(0))] + ranks("init_begin", 2)).evolve(past=past(weight_gib=32.0))
    s = reduce(s, snap(2.0), T0 + 3)
    s = feed(ranks("load_begin", 4), s)
    for sec in range(5, 21):  # 1 GiB/s per GPU; the shard bar moves slower than the bytes
        s = reduce(s, snap(2.0 + (sec - 4)), T0 + sec)
        s = reduce(s, BarProgress("weights", (sec - 4) // 4, 16, elapsed_s=float(sec - 4)), T0 + sec)
    e = estimate(s, T0 + 20)
    assert e.source == "GPU memory" and e.phase_left_s is not None and abs(e.phase_left_s - 16.0) < 0.5
    left, _ = pace(s, s.shards, T0 + 20)  # type: ignore[arg-type]
    assert left == e.phase_left_s
    assert fmt.eta(left) in verdict_line(s), verdict_line(s)
