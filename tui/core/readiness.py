"""The readiness reducer: `reduce(state, event, now)` folds one event into the frozen `Readiness` state.

Pure and total: unknown events return the state unchanged; nothing here reads a clock or does IO.
The phase only moves forward (into `failed` from anywhere); a new start starts afresh: a new launch in the log,
a truncated or rotated log (a relaunch the parser cannot see), or a launch/restart by sglang-tui itself.
"""

from __future__ import annotations

import re
from dataclasses import fields, replace
from typing import Callable

from tui.core import ranks as rank_map
from tui.core.events import (
    BarProgress,
    BatchStats,
    ConnectionState,
    ControlResult,
    Event,
    Failure,
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
    WeightFiles,
)
from tui.core.explain import PROCESS_EXITED, explain, from_processes, stopped_line
from tui.core.progress import advance_bar, is_complete, start_bar
from tui.core.weightsmem import weights_memory
from tui.core.stall import stall_for
from tui.core.state import (
    PHASE_ORDER,
    DecodeInfo,
    ErrorInfo,
    Phase,
    RankState,
    Readiness,
    ServerInfo,
)
from tui.core.timeline import close_draft, enter_phase, open_draft

DECODE_HISTORY = 120
GPU_HISTORY = 120
GPU_CHANGE_BYTES = 32 << 20  # less than this is noise, not a sign of loading
STOP_ACTIONS = ("terminate", "kill", "stop")
LAUNCH_ACTIONS = ("launch", "restart")
NEW_FILE_RESETS = ("truncated", "rotated")  # a relaunch with `> LOG`, or a rotation: the new file is a new start
STOP_WINDOW_S = 15.0  # a death this soon after our own stop is that stop
LAUNCH_WINDOW_S = 120.0  # a log restart this soon before our launch's result is that launch (a restart can be slow)
FIND_GRACE_S = 15.0  # a new launch's processes may be found late (the host is re-scanned every few seconds)

# A milestone of the main model moves the phase to (at least) this.
MILESTONE_PHASE: dict[str, Phase] = {
    "init_begin": Phase.INIT,
    "init_end": Phase.INIT,
    "mem_baseline": Phase.INIT,
    "load_begin": Phase.LOADING_WEIGHTS,
    "load_end": Phase.LOADING_WEIGHTS,
    "kv_alloc": Phase.KV_CACHE,
    "mem_pool_end": Phase.KV_CACHE,
    "graph_begin": Phase.CUDA_GRAPH,
    "graph_end": Phase.CUDA_GRAPH,
    "uvicorn_started": Phase.WARMUP,
    "app_startup_complete": Phase.WARMUP,
    "uvicorn_running": Phase.WARMUP,
    "warmup_request": Phase.WARMUP,
}
# Milestones that only a scheduler prints: with TP=1 they carry no rank label, and belong to TP0.
SCHEDULER_KINDS = frozenset(
    {"init_begin", "init_end", "mem_baseline", "load_begin", "load_end", "kv_alloc", "mem_pool_end",
     "graph_begin", "graph_end", "max_tokens", "unbalanced_memory", "load_straggler"}
)
# Draft milestones that open/close a draft span inside the main phase.
DRAFT_SPANS: dict[str, tuple[Phase, bool]] = {
    "load_begin": (Phase.LOADING_WEIGHTS, True),
    "load_end": (Phase.LOADING_WEIGHTS, False),
    "graph_begin": (Phase.CUDA_GRAPH, True),
    "graph_end": (Phase.CUDA_GRAPH, False),
}
HTTP_UP_ENDPOINTS = frozenset({"/v1/models", "/model_info", "/get_model_info", "/server_info", "/get_server_info"})
HTTP_ANSWERS = frozenset({"ok", "starting", "http_error"})
_TP_INDEX = re.compile(r"(?:\bTP|^rank)(\d+)\b")

_ORDER = {phase: i for i, phase in enumerate(PHASE_ORDER)}
Handler = Callable[[Readiness, object, float], Readiness]


def reduce(state: Readiness, event: Event, now: float) -> Readiness:
    """Fold one event into the state at clock time `now` (seconds)."""
    handler = _HANDLERS.get(type(event))
    if handler is None:
        return state
    new = handler(state, event, now)
    return _finish(new, now)


# ----------------------------------------------------------------------------------------------- phases


def _advance(s: Readiness, target: Phase, at: str | None, t: float | None, now: float) -> Readiness:
    """Move to `target` when it is ahead of the current phase (failed is final until a new launch)."""
    if s.phase is Phase.FAILED or _ORDER[target] <= _ORDER[s.phase]:
        return s
    return _with(
        s,
        phase=target,
        phase_since=now,
        phase_since_log=at,
        timeline=enter_phase(s.timeline, target, at, t, now),
    )


def _fail(s: Readiness, at: str | None, t: float | None, now: float) -> Readiness:
    if s.phase is Phase.FAILED:
        return s
    return _with(
        s,
        phase=Phase.FAILED,
        phase_since=now,
        phase_since_log=at,
        timeline=enter_phase(s.timeline, Phase.FAILED, at, t, now),
        launched=True,
    )


def _maybe_ready(s: Readiness, at: str | None, t: float | None, now: float) -> Readiness:
    """Ready needs /health 200 when health answers at all; with no health answer, the log's fired-up line does."""
    if s.phase in (Phase.READY, Phase.SERVING, Phase.FAILED):
        return s
    if s.log_ready and (s.health_ready or _health_unreachable_since_fired_up(s)):
        return _advance(s, Phase.READY, at, t, now)
    if s.health_ready and _log_allows_health(s):
        return _advance(s, Phase.READY, at, t, now)
    return s


def _log_allows_health(s: Readiness) -> bool:
    """Whether a /health 200 can be this server's: not while its log shows it still loading (another server on
    the port), unless the log prints no INFO milestones at all (--log-level warning) or its schedulers are done."""
    if s.phase in (Phase.STARTING, Phase.WARMUP):
        return True
    m = s.latest_milestone
    return m is None or m.kind in ("max_tokens", "startup_timings")


def _health_unreachable_since_fired_up(s: Readiness) -> bool:
    """No HTTP answer at all: none probed (replay), or a /health probe after the fired-up line still got none.

    A refusal from before that line is stale: uvicorn may have come up since, and /health would say 503 or 200.
    """
    if s.health_reachable:
        return False
    if not s.health_checked_at:
        return True
    latest = max(when for _, when in s.health_checked_at)
    return s.log_ready_at is not None and latest >= s.log_ready_at


def _ready_allowed(s: Readiness) -> bool:
    return s.log_ready or s.health_ready or not s.health_reachable


def _fresh_launch(
    s: Readiness,
    at: str | None,
    t: float | None,
    now: float,
    *,
    why: str = "new launch",
    counts: bool = True,
    launched: bool = True,
    log_offset: int | None = None,
    from_log: bool = True,
) -> Readiness:
    """A new start: start over, keeping what describes the host and its probes rather than the launch.

    counts: a new launch in the same log (`launches`); from_log: the log itself showed the new start.
    Health results are kept for display, but `health_ready` waits for a /health 200 received after this.
    """
    return Readiness(
        phase=Phase.STARTING,
        phase_since=now,
        phase_since_log=at,
        first_seen_at=s.first_seen_at,
        timeline=enter_phase((), Phase.STARTING, at, t, now),
        last_progress_at=now,
        last_progress=why,
        log_offset=s.log_offset if log_offset is None else log_offset,
        launches=s.launches + 1 if counts else s.launches,
        health=s.health,
        health_checked_at=s.health_checked_at,
        health_reachable=s.health_reachable,
        gpus=s.gpus,
        gpus_at=s.gpus_at,
        gpu_history=s.gpu_history,
        connection=s.connection,
        connection_detail=s.connection_detail,
        connection_since=s.connection_since,
        process_alive=None,  # what the poll said was of the old launch; this one's processes are not found yet
        process_pids=(),
        last_control=s.last_control,
        last_control_at=s.last_control_at,
        stall_after=s.stall_after,
        launched=launched,
        last_log_at=at or s.last_log_at,
        log_restart_at=now if from_log else s.log_restart_at,
        past=s.past,  # the caller replaces it when the new launch's key differs
    )


# ------------------------------------------------------------------------------------------- log events


def _log_seen(
    s: Readiness, at: str | None, now: float, rank: str | None = None, what: str = "log line", tp_rank: int | None = None
) -> Readiness:
    """Any parsed log event is progress (it came from new log bytes) and may name a rank."""
    changes: dict[str, object] = {"last_progress_at": now, "last_progress": what}
    if at:
        changes["last_log_at"] = at
    index = tp_rank if tp_rank is not None else (_tp_index(rank) if rank else None)
    if index is not None and (s.tp_rank_max is None or index > s.tp_rank_max):
        changes["tp_rank_max"] = index
        if not s.server.tp_from_args and index >= 1:  # a lone TP0 tag says TP > 1, not how many
            changes["server"] = replace(s.server, tp_size=index + 1)
    return _with(s, **changes)  # type: ignore[arg-type]


def _on_rank_seen(s: Readiness, ev: RankSeen, now: float) -> Readiness:
    return _log_seen(s, ev.at, now, ev.rank, what="log: rank line", tp_rank=ev.tp_rank)


def _on_server_args(s: Readiness, ev: ServerArgs, now: float) -> Readiness:
    if s.launched and s.phase is not Phase.STARTING:
        s = _fresh_launch(s, ev.at, ev.t, now)  # a relaunch the parser could not see (log truncated or rotated)
    s = _log_seen(s, ev.at, now, what="server_args")
    server = s.server
    tp_size = ev.tp_size if ev.tp_size is not None else server.tp_size
    s = _with(
        s,
        launched=True,
        server=ServerInfo(
            model=ev.model or server.model,
            tp_size=tp_size,
            speculative=ev.speculative or server.speculative,
            draft_model=ev.draft_model or server.draft_model,
            port=ev.port if ev.port is not None else server.port,
            tp_from_args=ev.tp_size is not None or server.tp_from_args,
            dp_size=_first(ev.dp_size, server.dp_size),
            pp_size=_first(ev.pp_size, server.pp_size),
            ep_size=_first(ev.ep_size, server.ep_size),
            nnodes=_first(ev.nnodes, server.nnodes),
            load_format=_first(ev.load_format, server.load_format),
            quantization=_first(ev.quantization, server.quantization),
            version=server.version,
            args_hash=_first(ev.args_hash, server.args_hash),
        ),
    )
    if not s.timeline and s.phase is Phase.STARTING:
        s = _with(s, timeline=enter_phase((), Phase.STARTING, ev.at, ev.t, now), phase_since=now, phase_since_log=ev.at)
    return s


def _first(a: object, b: object) -> object:
    return a if a is not None else b


def _on_launch(s: Readiness, ev: LaunchStarted, now: float) -> Readiness:
    return _fresh_launch(s, ev.at, ev.t, now)


def _on_milestone(s: Readiness, ev: Milestone, now: float) -> Readiness:
    rank = ev.rank or ("TP0" if ev.kind in SCHEDULER_KINDS else None)
    s = _log_seen(s, ev.at, now, ev.rank, what=f"log: {ev.kind}")
    if rank:
        s = _with(s, ranks=_update_rank(s.ranks, rank, ev, now))
    draft = ev.draft or _looks_like_draft_load(s, ev)
    if draft:
        span = DRAFT_SPANS.get(ev.kind)
        if span is not None:
            phase, begins = span
            opener = open_draft if begins else close_draft
            s = _with(s, timeline=opener(s.timeline, phase, ev.at, ev.t, now))
        return s
    s = _with(s, latest_milestone=ev, milestone_ranks=_add_rank(s.milestone_ranks, ev.kind, rank))
    if ev.kind == "startup_timings":
        s = _with(s, startup_timings=tuple((k, float(v)) for k, v in ev.fields if isinstance(v, (int, float))))
    if ev.kind in MILESTONE_PHASE or ev.kind == "fired_up":
        s = _with(s, launched=True)
    if ev.kind == "fired_up":
        ready_at = s.log_ready_at if s.log_ready else now
        return _maybe_ready(_with(s, log_ready=True, log_ready_at=ready_at), ev.at, ev.t, now)
    target = MILESTONE_PHASE.get(ev.kind)
    return _advance(s, target, ev.at, ev.t, now) if target is not None else s


def _looks_like_draft_load(s: Readiness, ev: Milestone) -> bool:
    """An unflagged second weight load after the target's (EAGLE v1 order: after its capture) is the draft's."""
    if ev.kind not in ("load_begin", "load_end") or not s.server.speculative:
        return False
    return _ORDER[s.phase] > _ORDER[Phase.LOADING_WEIGHTS] and s.phase is not Phase.FAILED


def _on_bar(s: Readiness, ev: BarProgress, now: float) -> Readiness:
    s = _log_seen(s, ev.at, now, ev.rank, what=f"log: {ev.bar} bar")
    when, clock = _bar_time(ev, now)
    if ev.bar == "weights":
        if _is_draft_bar(s, ev):
            return _draft_bar(s, ev, when, clock, now)
        old = s.shards
        if old is None or old.total != ev.total:
            bar = start_bar(ev.done, ev.total, when, clock, now, label=ev.label)
        else:
            bar = advance_bar(old, ev.done, when, clock, now)
        if bar.rate_per_s is None and ev.remaining_s is not None and not is_complete(bar):
            bar = replace(bar, eta_s=ev.remaining_s)  # tqdm's own estimate until we have a rate
        s = _with(s, shards=bar, launched=True)
        if old is None or bar.done != old.done:
            s = _with(s, last_progress=f"shards {bar.done}/{bar.total}")
        return _advance(s, Phase.LOADING_WEIGHTS, ev.at, ev.t, now)
    if ev.bar == "draft_weights":
        return _draft_bar(s, ev, when, clock, now)
    if ev.bar == "capture":
        old = s.capture
        extra = {"bs": ev.bs, "avail_mem_gb": ev.avail_mem_gb, "label": ev.label}
        if old is None or old.total != ev.total or ev.done < old.done:
            bar = start_bar(ev.done, ev.total, when, clock, now, **extra)
        else:
            bar = advance_bar(old, ev.done, when, clock, now, **extra)
        s = _with(s, capture=bar, launched=True)
        if bar != old:
            s = _with(s, last_progress=f"capture {bar.done}/{bar.total}")
        return _advance(s, Phase.CUDA_GRAPH, ev.at, ev.t, now)
    return s


def _bar_time(ev: BarProgress, now: float) -> tuple[float, str]:
    """The time axis of a bar's rate: tqdm's own elapsed (printed in the frame, 1 s steps), else log time, else now."""
    if ev.elapsed_s is not None:
        return ev.elapsed_s, "tqdm"
    if ev.t is not None:
        return ev.t, "log"
    return now, "clock"


def _is_draft_bar(s: Readiness, ev: BarProgress) -> bool:
    """A second weight bar after the target's finished (or of another size, with speculative on) is the draft's."""
    main = s.shards
    if main is None:
        return False
    if is_complete(main):
        return ev.total != main.total or ev.done < main.done
    return ev.total != main.total and bool(s.server.speculative)


def _draft_bar(s: Readiness, ev: BarProgress, when: float, clock: str, now: float) -> Readiness:
    old = s.draft_shards
    if old is None or old.total != ev.total or (is_complete(old) and ev.done < old.done):
        bar = start_bar(ev.done, ev.total, when, clock, now, label=ev.label)
    else:
        bar = advance_bar(old, ev.done, when, clock, now)
    timeline = open_draft(s.timeline, Phase.LOADING_WEIGHTS, ev.at, ev.t, now)
    if is_complete(bar):
        timeline = close_draft(timeline, Phase.LOADING_WEIGHTS, ev.at, ev.t, now)
    s = _with(s, draft_shards=bar, timeline=timeline, launched=True)
    if old is None or bar.done != old.done:
        s = _with(s, last_progress=f"draft shards {bar.done}/{bar.total}")
    return s


def _on_failure(s: Readiness, ev: Failure, now: float) -> Readiness:
    s = _log_seen(s, ev.at, now, ev.rank, what="log: failure")
    old = s.error
    if old is None or (ev.root_cause and not old.root_cause):
        s = _with(s, error=ErrorInfo(kind=ev.kind, line=ev.line, at=ev.at, root_cause=ev.root_cause))
    return _fail(s, ev.at, ev.t, now)


def _on_batch(s: Readiness, ev: BatchStats, now: float) -> Readiness:
    s = _log_seen(s, ev.at, now, ev.rank, what=f"log: {ev.stage} batch")
    if ev.stage != "decode":
        return s
    decode = DecodeInfo(
        accept_len=ev.accept_len,
        accept_rate=ev.accept_rate,
        gen_throughput=ev.gen_throughput,
        running_req=ev.running_req,
        token_usage=ev.token_usage,
        at=ev.at,
    )
    history = (s.decode_history + ((now, ev.gen_throughput, ev.accept_len),))[-DECODE_HISTORY:]
    s = _with(s, decode=decode, decode_history=history)
    if ev.accept_len is not None and not s.server.speculative:
        s = _with(s, server=replace(s.server, speculative="unknown"))
    if ev.running_req is not None and ev.running_req <= 0:
        return s
    # Decoding requests: the server serves (a log attached mid-run shows nothing else).
    if s.phase in (Phase.STARTING, Phase.READY) or (s.phase is Phase.WARMUP and _ready_allowed(s)):
        return _advance(s, Phase.SERVING, ev.at, ev.t, now)
    return s


def _on_hint(s: Readiness, ev: SpeculativeHint, now: float) -> Readiness:
    s = _log_seen(s, ev.at, now, what="log: speculative hint")
    current = s.server.speculative
    if current and current != "unknown":
        return s
    return _with(s, server=replace(s.server, speculative=ev.algorithm or "unknown"))


# ---------------------------------------------------------------------------------------- source events


def _on_log_activity(s: Readiness, ev: LogActivity, now: float) -> Readiness:
    if ev.offset == s.log_offset and not ev.data:
        return s
    return _with(s, log_offset=ev.offset, last_progress_at=now, last_progress="log bytes")


def _on_log_reset(s: Readiness, ev: LogReset, now: float) -> Readiness:
    """A truncated or rotated log is a new start (the monitor's fresh parser will not say LaunchStarted)."""
    if ev.reason in NEW_FILE_RESETS:
        return _fresh_launch(
            s, None, None, now, why=f"log {ev.reason}", counts=False, launched=_launched_by_us(s, now), log_offset=0
        )
    if ev.reason in ("missing", "appeared"):
        return _with(s, log_offset=0)
    return s


def _on_gpus(s: Readiness, ev: GpuSnapshot, now: float) -> Readiness:
    if ev.error is not None or not ev.gpus:
        return _with(s, gpus=ev, gpus_at=now)
    changes: dict[str, object] = {"gpus": ev, "gpus_at": now, "gpu_history": _gpu_history(s.gpu_history, ev)}
    if _memory_moved(s.gpus, ev):
        changes["last_progress_at"] = now
        changes["last_progress"] = "GPU memory"
    if s.phase is Phase.LOADING_WEIGHTS:
        changes["weights_mem"] = weights_memory(s.weights_mem, s.gpus, ev, _server_gpus(s), now)
    s = _with(s, **changes)  # type: ignore[arg-type]
    return _with(s, ranks=_map_ranks(s, ev))


def _server_gpus(s: Readiness) -> frozenset[int] | None:
    """The GPUs the server's ranks run on, when the ranks are mapped; None: every GPU of the probe."""
    found = frozenset(r.gpu_index for r in s.ranks if r.gpu_index is not None)
    return found or None


def _on_health(s: Readiness, ev: HealthResult, now: float) -> Readiness:
    results = tuple(r for r in s.health if r.endpoint != ev.endpoint) + (ev,)
    checked = tuple(c for c in s.health_checked_at if c[0] != ev.endpoint) + ((ev.endpoint, now),)
    reachable = any(_http_answer(r) for r in results)
    s = _with(s, health=results, health_checked_at=checked, health_reachable=reachable)
    if ev.endpoint == "/health":
        s = _with(s, health_ready=ev.outcome == "ok")
    if ev.outcome == "ok" and ev.endpoint in HTTP_UP_ENDPOINTS and s.phase is Phase.STARTING:
        s = _advance(s, Phase.WARMUP, None, None, now)  # uvicorn is up: warmup at most, never ready
    return _maybe_ready(s, None, None, now)


def _http_answer(r: HealthResult) -> bool:
    return r.outcome in HTTP_ANSWERS or (r.outcome == "garbage" and r.status is not None)


def _on_process(s: Readiness, ev: ServerProcess, now: float) -> Readiness:
    """No process of the server left: failed in any phase (not stalled, and not ready whatever the log said)."""
    if not ev.alive and _not_found_yet(s, now):
        return _with(s, process_alive=None, process_pids=())  # unknown, not gone: it may just not be found yet
    s = _with(s, process_alive=ev.alive, process_pids=ev.pids)
    if ev.alive or not (s.launched or s.timeline) or s.phase is Phase.FAILED:
        return s
    if _stopped_by_us(s, now):
        return _stopped(s, s.last_control.action, now)  # type: ignore[union-attr]
    return _fail(_with(s, error=ErrorInfo(kind="other", line=PROCESS_EXITED, root_cause=False)), None, None, now)


def _stopped_by_us(s: Readiness, now: float) -> bool:
    """Our own stop succeeded shortly before, during this launch."""
    c, when = s.last_control, s.last_control_at
    if c is None or when is None or not c.ok or c.action not in STOP_ACTIONS or now - when > STOP_WINDOW_S:
        return False
    return not s.timeline or when >= s.timeline[0].started_at


def _not_found_yet(s: Readiness, now: float) -> bool:
    """A launch begun moments ago whose processes no poll has seen yet: the poll may not have found them."""
    if s.process_alive is True or not s.timeline:
        return False
    return now - s.timeline[0].started_at <= FIND_GRACE_S


def _launched_by_us(s: Readiness, now: float, within: float = LAUNCH_WINDOW_S) -> bool:
    c, when = s.last_control, s.last_control_at
    return c is not None and when is not None and c.ok and c.action in LAUNCH_ACTIONS and now - when <= within


def _stopped(s: Readiness, action: str, now: float) -> Readiness:
    """Failed because sglang-tui stopped it: a log line that states another cause (an OOM before) still wins."""
    old = s.error
    if old is None or not old.root_cause or from_processes(old):
        s = _with(s, error=ErrorInfo(kind="other", line=stopped_line(action), root_cause=True))
    return _fail(s, None, None, now)


def _on_connection(s: Readiness, ev: ConnectionState, now: float) -> Readiness:
    since = s.connection_since if ev.state == s.connection and s.connection_since is not None else now
    return _with(s, connection=ev.state, connection_detail=ev.detail, connection_since=since)


def _on_control(s: Readiness, ev: ControlResult, now: float) -> Readiness:
    """Our own launch/restart is a new start (unless the log already showed it); our own stop ends the launch."""
    if ev.ok and ev.action in LAUNCH_ACTIONS:
        shown = s.log_restart_at is not None and now - s.log_restart_at <= LAUNCH_WINDOW_S and (
            s.last_control_at is None or s.log_restart_at >= s.last_control_at
        )
        if not shown:
            s = _fresh_launch(s, None, None, now, why=f"{ev.action} by sglang-tui", counts=False, from_log=False)
        return _with(s, last_control=ev, last_control_at=now, launched=True)
    s = _with(s, last_control=ev, last_control_at=now)
    if ev.ok and ev.action in STOP_ACTIONS and (s.launched or s.timeline):
        return _stopped(_with(s, process_alive=False, process_pids=()), ev.action, now)
    return s


def _on_tick(s: Readiness, ev: Tick, now: float) -> Readiness:
    return s


def _on_weight_files(s: Readiness, ev: WeightFiles, now: float) -> Readiness:
    if ev.total_bytes is None or ev.total_bytes <= 0:
        return s
    return _with(s, weight_files=(ev.model, ev.total_bytes, ev.files))


_HANDLERS: dict[type, Handler] = {
    ServerArgs: _on_server_args,  # type: ignore[dict-item]
    LaunchStarted: _on_launch,  # type: ignore[dict-item]
    RankSeen: _on_rank_seen,  # type: ignore[dict-item]
    Milestone: _on_milestone,  # type: ignore[dict-item]
    BarProgress: _on_bar,  # type: ignore[dict-item]
    Failure: _on_failure,  # type: ignore[dict-item]
    BatchStats: _on_batch,  # type: ignore[dict-item]
    SpeculativeHint: _on_hint,  # type: ignore[dict-item]
    LogActivity: _on_log_activity,  # type: ignore[dict-item]
    LogReset: _on_log_reset,  # type: ignore[dict-item]
    GpuSnapshot: _on_gpus,  # type: ignore[dict-item]
    HealthResult: _on_health,  # type: ignore[dict-item]
    ServerProcess: _on_process,  # type: ignore[dict-item]
    ConnectionState: _on_connection,  # type: ignore[dict-item]
    ControlResult: _on_control,  # type: ignore[dict-item]
    Tick: _on_tick,  # type: ignore[dict-item]
    WeightFiles: _on_weight_files,  # type: ignore[dict-item]
}


# ------------------------------------------------------------------------------------------------ finish


def _finish(s: Readiness, now: float) -> Readiness:
    """Stamp the clock, apply the stall rule, and explain the verdict."""
    if s.first_seen_at is None:  # the first event: the phase began no earlier than now (not at clock 0)
        s = _with(s, first_seen_at=now, phase_since=now)
    s = _with(s, updated_at=now)
    s.__dict__["stall"] = stall_for(s, now)  # s is our own fresh copy: fill it in place before anyone sees it
    reason, evidence = explain(s, now)
    s.__dict__["reason"] = reason
    s.__dict__["evidence"] = evidence
    return s


_FIELDS = frozenset(f.name for f in fields(Readiness))


def _with(s: Readiness, **changes: object) -> Readiness:
    """dataclasses.replace for the big state, without re-running __init__ over ~50 fields (20x faster)."""
    unknown = changes.keys() - _FIELDS
    if unknown:
        raise TypeError(f"Readiness has no field {sorted(unknown)}")
    new = object.__new__(Readiness)
    new.__dict__.update(s.__dict__)
    new.__dict__.update(changes)
    return new


# ------------------------------------------------------------------------------------------------- ranks


def _tp_index(rank: str) -> int | None:
    match = _TP_INDEX.search(rank)
    return int(match.group(1)) if match else None


def rank_sort_key(name: str) -> tuple[tuple[str, int], ...]:
    """Natural order of rank labels: TP2 before TP10, DP0 TP1 before DP1 TP0."""
    return tuple((m.group(1), int(m.group(2))) for m in re.finditer(r"([A-Za-z_]+)(\d+)", name)) or ((name, 0),)


def _update_rank(ranks: tuple[RankState, ...], name: str, ev: Milestone, now: float) -> tuple[RankState, ...]:
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
    return tuple(sorted(others + (new,), key=lambda r: rank_sort_key(r.name)))


def _add_rank(table: tuple[tuple[str, tuple[str, ...]], ...], kind: str, rank: str | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    for i, (k, names) in enumerate(table):
        if k == kind:
            if rank is None or rank in names:
                return table
            return table[:i] + ((k, names + (rank,)),) + table[i + 1 :]
    return table + ((kind, (rank,) if rank else ()),)


def _map_ranks(s: Readiness, snapshot: GpuSnapshot) -> tuple[RankState, ...]:
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
    return tuple(sorted(by_name.values(), key=lambda r: rank_sort_key(r.name)))


# -------------------------------------------------------------------------------------------------- GPUs


def _memory_moved(old: GpuSnapshot | None, new: GpuSnapshot) -> bool:
    if old is None or old.error is not None:
        return False
    before = {g.index: g.used_bytes for g in old.gpus}
    for g in new.gpus:
        prev = before.get(g.index)
        if prev is not None and g.used_bytes is not None and abs(g.used_bytes - prev) >= GPU_CHANGE_BYTES:
            return True
    return False


def _gpu_history(history: tuple[tuple[int, tuple[float, ...]], ...], snap: GpuSnapshot) -> tuple[tuple[int, tuple[float, ...]], ...]:
    table = dict(history)
    for g in snap.gpus:
        if g.used_bytes is None or not g.total_bytes:
            continue
        table[g.index] = (table.get(g.index, ()) + (g.used_bytes / g.total_bytes,))[-GPU_HISTORY:]
    return tuple(sorted(table.items()))
