"""The simulator's launch-to-launch variation (issue 9): --seed jitter, --slow PHASE=FACTOR, --loader multithread."""

from __future__ import annotations

import pytest

from tests.helpers.processes import Cli
from tui.sim.params import SimParams, check
from tui.sim.script import RankScript, Schedule
from tui.sim.variation import PHASE_JITTER, THREADS, parse_slow, phase_scale


def params(**kw: object) -> SimParams:
    return SimParams(log="x.log", port=30000, tp=2, shards=32, **kw)  # type: ignore[arg-type]


def test_seed_zero_is_the_classic_schedule_and_seeds_jitter_a_few_percent() -> None:
    assert Schedule.build(params()).shard_done == Schedule.build(params(seed=0, loader="default")).shard_done
    scales = {phase_scale(seed, "", "cuda_graph") for seed in range(1, 40)}
    assert len(scales) > 30 and all(abs(s - 1) <= PHASE_JITTER for s in scales)
    assert phase_scale(0, "", "cuda_graph") == 1.0 and phase_scale(5, "", "cuda_graph") == phase_scale(
        5, "", "cuda_graph"
    )


def test_slow_capture_doubles_the_capture_only() -> None:
    normal, slow = RankScript(params(), 0), RankScript(params(slow="cuda_graph=2"), 0)
    assert slow.timings["load_weight"] == pytest.approx(normal.timings["load_weight"])
    for graph in ("target_prefill", "target_verify", "draft_decode"):
        assert slow.timings[graph] == pytest.approx(2 * normal.timings[graph], rel=0.05)
    assert parse_slow("capture=2, weights=1.5") == {"cuda_graph": 2.0, "loading_weights": 1.5}


@pytest.mark.parametrize(("slow", "words"), [("init=2", "PHASE one of"), ("cuda_graph=x", "must be a number"),
                                             ("cuda_graph", "PHASE=FACTOR"), ("cuda_graph=0", "between")])  # fmt: skip
def test_bad_slow_is_one_line(slow: str, words: str, cli: Cli) -> None:
    problem = check(params(slow=slow))
    assert problem is not None and words in problem
    out = cli("simulate", "--log", "/tmp/x.log", "--port", "1", "--slow", slow, timeout=30)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr
    assert check(params(loader="threads")) == "--loader threads: use one of default, multithread"


def test_multithread_loader_bursts_while_memory_grows_steadily() -> None:
    p = params(loader="multithread", seed=3)
    done = Schedule.build(p).shard_done
    gaps = [b - a for a, b in zip(done, done[1:], strict=False)]
    big = [g for g in gaps if g > 20.0]  # between waves: nothing for most of a wave
    assert len(big) == 32 // THREADS - 1 and sum(1 for g in gaps if g < 8.0) == len(gaps) - len(big)
    steps = RankScript(p, 0).steps
    load = [s for s in steps if s.mem is not None and done[0] - 50 < s.at <= done[-1]]  # from the first wave on
    mems = [s.mem for s in load]
    assert mems == sorted(mems)  # type: ignore[type-var]  # never shrinks
    assert (
        max(b.at - a.at for a, b in zip(load, load[1:], strict=False)) <= 1.0 + 1e-9
    )  # a memory step at least every second


def test_fault_seconds_sets_how_long_a_silent_fault_runs() -> None:
    """`--fault-seconds S`: the real length of jit-compile's and download's silence (tests run it shorter than
    the 48 s and 30 s a real first JIT build or download is modelled on); ranks get it with their parameters."""
    from tui.sim import busy
    from tui.sim.rank import Rank

    given = params(fault="jit-compile", fault_seconds=24.0)
    assert check(given) is None and SimParams.from_json(given.to_json()).fault_seconds == 24.0
    rank = Rank(SimParams.from_json(given.to_json()), 0, -1, -1, 0, 0.0)
    assert rank._silent_s(busy.JIT_REAL_S) == 24.0
    assert Rank(params(), 0, -1, -1, 0, 0.0)._silent_s(busy.DOWNLOAD_REAL_S) == busy.DOWNLOAD_REAL_S
    assert check(params(fault_seconds=0.5)) == "--fault-seconds 0.5: use 1 to 3600 real seconds"
