"""Property: whatever the events, the phase never moves backwards except into failed or at a new start (a new
launch in the log, a truncated or rotated log, a launch by sglang-tui)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core.events import (
    BarProgress,
    BatchStats,
    ConnectionState,
    ControlResult,
    Failure,
    GpuInfo,
    GpuSnapshot,
    HealthResult,
    LaunchStarted,
    LogActivity,
    LogReset,
    Milestone,
    RankSeen,
    ServerArgs,
    ServerProcess,
    SpeculativeHint,
    Tick,
)
from tui.core.readiness import FIND_GRACE_S, MILESTONE_PHASE, reduce
from tui.core.report import format_report, to_json
from tui.core.state import PHASE_ORDER, Phase, Readiness
from tui.core.wording import verdict_line

times = st.one_of(st.none(), st.floats(min_value=0, max_value=1e6, allow_nan=False))
ranks = st.one_of(st.none(), st.sampled_from(["TP0", "TP1", "TP7", "DP1 TP3", "rank5"]))
kinds = st.sampled_from(sorted(MILESTONE_PHASE) + ["fired_up", "max_tokens", "startup_timings", "unbalanced_memory"])

events = st.one_of(
    st.builds(
        ServerArgs,
        tp_size=st.one_of(st.none(), st.integers(1, 16)),
        speculative=st.sampled_from([None, "EAGLE3"]),
        t=times,
    ),
    st.builds(Milestone, kind=kinds, rank=ranks, draft=st.booleans(), t=times),
    st.builds(
        BarProgress,
        bar=st.sampled_from(["weights", "draft_weights", "capture", "other"]),
        done=st.integers(-2, 70),
        total=st.integers(0, 64),
        bs=st.one_of(st.none(), st.integers(1, 64)),
        t=times,
        elapsed_s=st.one_of(st.none(), st.floats(0, 1e4)),
        remaining_s=st.one_of(st.none(), st.floats(0, 1e4)),
    ),
    st.builds(
        RankSeen,
        rank=st.sampled_from(["TP0", "TP3", "rank7", "DP1 TP3"]),
        tp_rank=st.one_of(st.none(), st.integers(0, 15)),
    ),
    st.builds(
        Failure,
        kind=st.sampled_from(["oom", "nccl", "other"]),
        line=st.text(max_size=20),
        root_cause=st.booleans(),
        t=times,
    ),
    st.builds(
        BatchStats,
        stage=st.sampled_from(["prefill", "decode"]),
        running_req=st.one_of(st.none(), st.integers(0, 4)),
        accept_len=st.one_of(st.none(), st.floats(1, 4)),
        gen_throughput=st.one_of(st.none(), st.floats(0, 1000)),
        t=times,
    ),
    st.builds(SpeculativeHint, algorithm=st.sampled_from([None, "EAGLE"])),
    st.builds(
        HealthResult,
        endpoint=st.sampled_from(["/health", "/v1/models", "/model_info"]),
        outcome=st.sampled_from(["refused", "starting", "ok", "http_error", "timeout", "garbage", "error"]),
        status=st.one_of(st.none(), st.sampled_from([200, 503, 500])),
    ),
    st.builds(ServerProcess, alive=st.booleans()),
    st.builds(ConnectionState, state=st.sampled_from(["connecting", "connected", "reconnecting", "failed"])),
    st.builds(ControlResult, action=st.sampled_from(["launch", "restart", "terminate", "kill"]), ok=st.booleans()),
    st.builds(LogActivity, offset=st.integers(0, 10_000)),
    st.builds(LogReset, reason=st.sampled_from(["truncated", "rotated", "started_at_last_launch"])),
    st.builds(
        GpuSnapshot,
        source=st.just("sim"),
        gpus=st.lists(
            st.builds(
                GpuInfo,
                index=st.integers(0, 3),
                used_bytes=st.one_of(st.none(), st.integers(0, 1 << 40)),
                total_bytes=st.one_of(st.none(), st.integers(0, 1 << 40)),
            ),
            max_size=4,
        ).map(tuple),
        error=st.sampled_from([None, "no driver"]),
    ),
    st.just(Tick()),
    st.just(LaunchStarted()),
)


def seen_since(s: Readiness) -> float:
    """Since when we know the launch: its start, or (attached to one the log says began earlier) our first event."""
    began = s.timeline[0].started_at
    return max(began, s.first_seen_at if s.first_seen_at is not None else began)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(events, st.floats(min_value=0, max_value=1e6, allow_nan=False)), max_size=40))
def test_phase_only_moves_forward(sequence: list[tuple[object, float]]) -> None:
    order = {phase: i for i, phase in enumerate(PHASE_ORDER)}
    s = Readiness()
    for event, now in sequence:
        new = reduce(s, event, now)  # type: ignore[arg-type]
        relaunch = isinstance(event, LaunchStarted) or (new.launches > s.launches)
        new_file = isinstance(event, LogReset) and event.reason in ("truncated", "rotated")
        our_launch = isinstance(event, ControlResult) and event.ok and event.action in ("launch", "restart")
        if relaunch:
            assert new.phase is Phase.STARTING and new.launches == s.launches + 1
        elif new_file:  # a relaunch the parser cannot see: a new start, not a new launch in the same log
            assert new.phase is Phase.STARTING and new.launches == s.launches and not new.health_ready
            assert new.shards is None and new.error is None and not new.log_ready and new.log_offset == 0
        elif our_launch:  # a new start, unless the log already showed it
            assert new.phase is Phase.STARTING or new.phase is s.phase
        else:
            assert new.phase is Phase.FAILED or (s.phase is not Phase.FAILED and order[new.phase] >= order[s.phase]), (
                s.phase,
                event,
                new.phase,
            )
        if (
            isinstance(event, ServerProcess)
            and not event.alive
            and new.launched
            and (s.process_alive is True or not s.timeline or now - seen_since(s) > FIND_GRACE_S)
        ):
            assert new.phase is Phase.FAILED  # no process of the server left: never ready, serving or stalled
        if s.first_seen_at is None:
            assert new.phase_since == now == new.first_seen_at  # the first event starts the phase clock
        if new.phase in (Phase.READY, Phase.SERVING, Phase.FAILED):
            assert new.stall is None
        if new.process_alive is False:
            assert new.stall is None
        assert sum(1 for span in new.timeline if span.model == "main" and span.ended_at is None) <= 1
        assert verdict_line(new)
        s = new
    to_json(s)
    format_report(s)
