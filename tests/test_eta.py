"""The ETA core (tui/core/eta.py), pure: history medians with live progress under one rule every view shows, the
honest shard ETA that is withdrawn when progress stops, regressions flagged against the history, and the stall
budget from it."""

from __future__ import annotations

from tests.test_readiness_phases import at, feed, ranks
from tui.core.eta import WITHDRAW_AFTER, estimate, eta_words
from tui.core.events import BarProgress, Event, GpuInfo, GpuSnapshot, Milestone, ServerArgs, Tick
from tui.core.past import Past, PastLaunch
from tui.core.readiness import reduce
from tui.core.report import to_json
from tui.core.stall import limit_for
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line

T0 = 36000.0
PHASES = (("starting", 2.0), ("init", 2.0), ("loading_weights", 64.0), ("kv_cache", 1.0), ("cuda_graph", 30.0),
          ("warmup", 5.0))  # fmt: skip


def past(n: int = 3, scale: tuple[float, ...] = (1.0, 0.97, 1.03), weight_gib: float | None = None) -> Past:
    launches = tuple(
        PastLaunch(i + 1, sum(d for _, d in PHASES) * scale[i % len(scale)],
                   tuple((p, d * scale[i % len(scale)]) for p, d in PHASES), weight_gib, 16)
        for i in range(n)
    )  # fmt: skip
    return Past(key="k", launches=launches)


def loading(shards_done: int, every: float = 4.0, state: Readiness | None = None) -> Readiness:
    """Into loading_weights at second 4; shard i of 16 done at second 4 + every*i."""
    s = feed([ServerArgs(model="m", tp_size=2, **at(0))] + ranks("init_begin", 2) + ranks("load_begin", 4), state)
    for d in range(shards_done + 1):
        sec = 4 + every * d
        s = reduce(s, BarProgress("weights", d, 16, at=at(int(sec))["at"], t=T0 + sec, elapsed_s=every * d), T0 + sec)
    return s


def test_no_history_gives_the_phase_progress_eta_only() -> None:
    s = loading(4)
    eta = estimate(s, s.updated_at)
    assert eta.ready_in_s is None and eta.basis == "progress" and eta.launches == 0
    assert eta.phase_left_s is not None and abs(eta.phase_left_s - 12 * 4.0) < 1.0
    assert to_json(s)["eta"] == {"ready_in_s": None, "phase_left_s": round(eta.phase_left_s, 1), "basis": "progress",
                                 "launches": 0}  # fmt: skip


def test_history_gives_ready_in_from_medians_and_progress() -> None:
    s = loading(4).evolve(past=past())
    now = s.updated_at
    eta = estimate(s, now)
    # 16 s of a 64 s median; the shards say 12 x 4 s = 48 s are left, and this launch's own progress decides the
    # phase's rest (issue 26 item 14: never a history's shorter figure beside the shards' own ETA)
    expected_left = 48.0
    assert eta.basis == "history" and eta.launches == 3
    assert abs(eta.phase_left_s - expected_left) < 0.5
    assert abs(eta.ready_in_s - (expected_left + 1.0 + 30.0 + 5.0)) < 0.5
    words = eta_words(eta)
    assert words.startswith("ready in ~") and "last 3 launches" in words and "–" in words


def test_shard_eta_decays_through_one_interval_then_is_withdrawn() -> None:
    s = loading(8, every=4.0)  # a shard every 4 s, the last at second 36
    last = s.shards.updated_at
    at_first = estimate(s, last).phase_left_s
    assert at_first is not None
    due = estimate(reduce(s, Tick(), last + 3.0), last + 3.0).phase_left_s
    assert due is not None and abs(due - (at_first - 3.0)) < 0.01  # the next shard is due: it counts down
    just_before = reduce(s, Tick(), last + WITHDRAW_AFTER * 4.0 - 0.5)
    assert "shards/s, ETA" in verdict_line(just_before) and "no progress" not in verdict_line(just_before)
    left_then = estimate(just_before, just_before.updated_at).phase_left_s
    assert left_then is not None and abs(left_then - (at_first - 4.0)) < 0.01  # overdue: no countdown past a step
    after = reduce(s, Tick(), last + WITHDRAW_AFTER * 4.0 + 0.5)
    silent = int(WITHDRAW_AFTER * 4.0 + 0.5)
    assert f"no progress for {silent} s · stalled at 3m00s" in verdict_line(after), verdict_line(after)
    eta = estimate(after, after.updated_at)
    assert eta.phase_left_s is None and eta.ready_in_s is None and eta.silent_s is not None
    with_history = reduce(s.evolve(past=past()), Tick(), last + WITHDRAW_AFTER * 4.0 + 0.5)
    assert estimate(with_history, with_history.updated_at).ready_in_s is None  # not a frozen small number
    stalled = reduce(s, Tick(), last + 200.0)
    assert stalled.stall is not None and to_json(stalled)["eta"]["ready_in_s"] is None


def test_gpu_memory_eta_from_the_weight_bytes_of_past_launches() -> None:
    gib = 1 << 30

    def snap(used_gib: float) -> GpuSnapshot:
        return GpuSnapshot(
            "sim", tuple(GpuInfo(i, used_bytes=int(used_gib * gib), total_bytes=140 * gib) for i in (0, 1))
        )

    s = feed([ServerArgs(model="m", tp_size=2, **at(0))] + ranks("init_begin", 2)).evolve(past=past(weight_gib=32.0))
    s = reduce(s, snap(2.0), T0 + 3)
    s = reduce(s, Milestone("load_begin", rank="TP0", **at(4)), T0 + 4)
    for sec in range(5, 21):  # 1 GiB/s per GPU, whatever the shard bar does
        s = reduce(s, snap(2.0 + (sec - 4)), T0 + sec)
    assert s.weights_mem is not None and abs(s.weights_mem.peak_gib - 16.0) < 1e-6
    eta = estimate(s, T0 + 20)
    assert eta.source == "GPU memory"
    # half loaded at 1 GiB/s: 16 s left by bytes (the history's 64 - 16 = 48 s says nothing of this launch's rest)
    assert abs(eta.phase_left_s - 16.0) < 0.5


def test_slow_phase_is_flagged_against_two_or_more_launches() -> None:
    base = feed([ServerArgs(model="m", tp_size=2, **at(0))] + ranks("init_begin", 2) + ranks("load_begin", 4)
                + ranks("load_end", 60) + ranks("kv_alloc", 61) + ranks("graph_begin", 62))  # fmt: skip
    assert base.phase is Phase.CUDA_GRAPH
    s = base.evolve(past=past())
    assert "slower than usual" not in verdict_line(reduce(s, Tick(), T0 + 62 + 40))  # 1.33x: usual enough
    late = reduce(s, Tick(), T0 + 62 + 63)
    assert "capture 2.1× slower than usual" in verdict_line(late), verdict_line(late)
    one = reduce(base.evolve(past=past(n=1)), Tick(), T0 + 62 + 63)
    assert "slower than usual" not in verdict_line(one)  # one earlier launch is not a "usual"


def test_a_phase_past_its_median_with_no_progress_gives_no_ready_in() -> None:
    """QA pass: `wait` on the hang-capture fault said "ready in ~0.3s" for 15 s of a capture that never moved:
    past the median, with no progress signal, the history's 0 s left plus the later phases was shown as an ETA."""
    base = feed([ServerArgs(model="m", tp_size=2, **at(0))] + ranks("init_begin", 2) + ranks("load_begin", 4)
                + ranks("load_end", 60) + ranks("kv_alloc", 61) + ranks("graph_begin", 62))  # fmt: skip
    s = base.evolve(past=past())
    early = estimate(s, T0 + 62 + 10)  # 10 s of a 30 s median: the history still knows
    assert early.basis == "history" and early.ready_in_s is not None and abs(early.ready_in_s - 25.0) < 1.0
    late = estimate(s, T0 + 62 + 40)  # 40 s of a 30 s median, no capture bar: nothing says what is left
    assert late.ready_in_s is None and late.phase_left_s is None and late.launches == 3
    assert not eta_words(late).startswith("ready in")
    assert to_json(reduce(s, Tick(), T0 + 62 + 40))["eta"]["ready_in_s"] is None


def test_stall_budget_comes_from_history() -> None:
    base = feed([ServerArgs(model="m", tp_size=2, **at(0))] + ranks("init_begin", 2) + ranks("load_begin", 4)
                + ranks("load_end", 60) + ranks("kv_alloc", 61) + ranks("graph_begin", 62))  # fmt: skip
    assert limit_for(base) == 300.0
    assert limit_for(base.evolve(past=past())) == 120.0  # 3 x the 30 s median, at least 2 minutes
    assert limit_for(base.evolve(past=past(scale=(2.0,)))) == 180.0  # 3 x a 60 s median


def test_sglang_startup_timings_are_kept_and_cross_checked() -> None:
    from tui.core.crosscheck import crosscheck
    from tui.core.report import format_report

    line = ("Engine startup timings (s): load_weight=50.00, kv_cache_allocation=1.27, scheduler_e2e=134.90, "
            "cuda_graph={prefill=23.70, decode=0.00, target_verify=18.02}, tokenizer_e2e=143.12")  # fmt: skip
    from tui.core.logmilestones import milestone

    found = milestone(line)
    assert found is not None
    kind, fields = found
    assert kind == "startup_timings" and dict(fields)["cuda_graph_total"] == 41.72
    s = feed([ServerArgs(model="m", tp_size=2, **at(0))] + ranks("init_begin", 2) + ranks("load_begin", 4)
             + ranks("load_end", 60) + ranks("kv_alloc", 61) + ranks("graph_begin", 62) + ranks("graph_end", 104)
             + [Milestone(kind, fields=fields, **at(105))])  # fmt: skip
    assert dict(s.startup_timings)["load_weight"] == 50.0
    differ = {name: round(diff, 2) for name, _, _, diff in crosscheck(s)}
    assert differ == {"load_weight": 0.14}  # 57 s in the log's phase vs SGLang's 50 s; capture agrees (43 vs 41.7)
    assert "load_weight: SGLang 50.00 s, the log's phase 57.0 s (+14%)" in format_report(s)


def test_ready_summary_names_the_slow_phase() -> None:
    from dataclasses import replace

    from tests.test_readiness_phases import at, startup
    from tui.core.events import HealthResult
    from tui.core.report import format_report

    # the capture ends 14 s later than startup()'s (20 s in all), so that its median below is over the ratio floor
    late: list[Event] = []
    for e in startup():
        t = getattr(e, "t", None)
        late.append(replace(e, **at(int(t) - 36000 + 14)) if t is not None and t >= 36016 else e)  # type: ignore[arg-type]
    fast = Past("k", tuple(PastLaunch(i, 20.0, (("cuda_graph", 8.0), ("loading_weights", 6.0))) for i in (1, 2)))
    s = feed(late).evolve(past=fast)
    s = reduce(s, HealthResult("/health", "ok", status=200), s.updated_at + 1)
    assert s.phase is Phase.READY
    capture = next(span for span in s.timeline if span.phase is Phase.CUDA_GRAPH)
    factor = capture.duration_s / 8.0
    assert f"; capture was {factor:.1f}× slower than usual" in verdict_line(s), verdict_line(s)
    assert "weights" not in verdict_line(s).split(";", 1)[1]  # loading took its usual 6 s
    assert f"slow:  capture {factor:.1f}× slower than usual" in format_report(s)


def test_no_ratio_over_a_median_under_the_floor() -> None:
    """A 2 s median is within the whole-second stamps' error: a 6 s capture is not "3.0× slower than usual"."""
    from tests.test_readiness_phases import startup
    from tui.core.eta import RATIO_FLOOR_S
    from tui.core.events import HealthResult

    tiny = Past("k", tuple(PastLaunch(i, 20.0, (("cuda_graph", 2.0), ("loading_weights", 6.0))) for i in (1, 2)))
    assert tiny.median("cuda_graph") == 2.0 < RATIO_FLOOR_S
    s = feed(startup()).evolve(past=tiny)
    s = reduce(s, HealthResult("/health", "ok", status=200), s.updated_at + 1)
    capture = next(span for span in s.timeline if span.phase is Phase.CUDA_GRAPH)
    assert s.phase is Phase.READY and capture.duration_s == 6.0
    assert "slower" not in verdict_line(s)


def test_a_median_needs_two_launches() -> None:
    one = Past("k", (PastLaunch(1, 20.0, (("cuda_graph", 30.0),)),))
    two = Past("k", (*one.launches, PastLaunch(2, 20.0, (("cuda_graph", 40.0),))))
    assert one.median("cuda_graph") is None and two.median("cuda_graph") == 35.0


def test_args_hash_ignores_volatile_fields() -> None:
    from tui.core.launchkey import args_hash

    line = ("server_args=ServerArgs(model_path='m', tp_size=8, port=30000, random_seed=913207644, "
            "host='0.0.0.0', mem_fraction_static=0.87, json_model_override_args='{\"a\": 1, \"b\": 2}')")  # fmt: skip
    same = line.replace("port=30000", "port=31000").replace("913207644", "42").replace("0.0.0.0", "127.0.0.1")
    other = line.replace("mem_fraction_static=0.87", "mem_fraction_static=0.9")
    dict_form = "server_args={'model_path': 'm', 'tp_size': 8, 'port': 1}"
    assert args_hash(line) == args_hash(same) and args_hash(line) != args_hash(other)
    assert args_hash(dict_form) == args_hash(dict_form.replace("'port': 1", "'port': 2")) is not None
    assert args_hash("no args here") is None
