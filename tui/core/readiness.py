"""The readiness reducer: `reduce(state, event, now)` folds one event into the frozen `Readiness` state.

Pure and total: unknown events return the state unchanged; nothing here reads a clock or does IO.
The phase only moves forward (into `failed` from anywhere); a new start starts afresh: a new launch in the log,
a truncated or rotated log (a relaunch the parser cannot see), or a launch/restart by sglang-tui itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from tui.core import activity as host_activity
from tui.core import ranks as rank_map
from tui.core import stacks
from tui.core.answerer import OURS, answerer, same_model
from tui.core.events import (
    BarProgress,
    BatchStats,
    ConnectionState,
    ControlResult,
    Event,
    Failure,
    GpuSnapshot,
    HealthResult,
    HostActivity,
    JitHint,
    LaunchStarted,
    LogActivity,
    LogFile,
    LogReset,
    Milestone,
    PortOwner,
    RankSeen,
    ServerArgs,
    ServerInfoAnswer,
    ServerProcess,
    SourceFailed,
    SpeculativeHint,
    Tick,
    WatchdogDump,
    WeightFiles,
)
from tui.core.explain import PROCESS_EXITED, from_processes, stopped_line
from tui.core.progress import advance_bar, is_complete, start_bar
from tui.core.ranklabels import sort_key, tp_index
from tui.core.stall import stall_for
from tui.core.state import (
    PHASE_ORDER,
    BarState,
    DecodeInfo,
    ErrorInfo,
    HealthFacts,
    LaunchFacts,
    Phase,
    ProcessFacts,
    ProgressFacts,
    RankState,
    Readiness,
    ServerInfo,
    WeightCacheInfo,
)
from tui.core.timeline import close_draft, enter_phase, open_draft
from tui.core.weightsmem import weights_memory

DECODE_HISTORY = 120
GPU_HISTORY = 120
GPU_CHANGE_BYTES = 32 << 20  # less than this is noise, not a sign of loading
STOP_ACTIONS = ("terminate", "kill", "stop")
SHUTDOWN_KINDS = frozenset({"shutdown"})  # the log's "SIGTERM received …" / uvicorn's "Shutting down"
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
    # SGLang 0.5.14 … 0.5.23 shapes (tui.core.logshapes)
    "dist_init": Phase.INIT,
    "kv_profile": Phase.KV_CACHE,
    "http_running": Phase.WARMUP,
    "pd_warmup_begin": Phase.WARMUP,
    "warmups_begin": Phase.WARMUP,
    "warmups_end": Phase.WARMUP,
}
# Bars other than the weights' and the classic capture's: the phase each one shows (None: a step inside a phase).
BAR_PHASE: dict[str, Phase | None] = {"piecewise": Phase.CUDA_GRAPH, "jit": None, "warmup": Phase.WARMUP}
BAR_FIELDS = {"piecewise": "piecewise", "jit": "jit", "warmup": "warmup_bar"}
# Milestones that only a scheduler prints: with TP=1 they carry no rank label, and belong to TP0.
SCHEDULER_KINDS = frozenset(
    {
        "init_begin",
        "init_end",
        "mem_baseline",
        "load_begin",
        "load_end",
        "kv_alloc",
        "mem_pool_end",
        "graph_begin",
        "graph_end",
        "max_tokens",
        "unbalanced_memory",
        "load_straggler",
    }
)
# Per-rank startup lines that every rank prints: seen for TP0 alone (and no other rank), TP is 1.
PER_RANK_KINDS = frozenset({"init_begin", "init_end", "mem_baseline", "load_begin", "load_end", "kv_alloc", "mem_pool_end",
                            "graph_begin", "graph_end"})  # fmt: skip
TP_ONE_REASON = "inferred: per-rank startup lines appear for TP0 only"
TP_UNTAGGED_REASON = "inferred: per-rank startup lines carry no TP tag (SGLang prints one only when TP > 1)"
# Draft milestones that open/close a draft span inside the main phase.
DRAFT_SPANS: dict[str, tuple[Phase, bool]] = {
    "load_begin": (Phase.LOADING_WEIGHTS, True),
    "load_end": (Phase.LOADING_WEIGHTS, False),
    "graph_begin": (Phase.CUDA_GRAPH, True),
    "graph_end": (Phase.CUDA_GRAPH, False),
}
HTTP_UP_ENDPOINTS = frozenset({"/v1/models", "/model_info", "/get_model_info", "/server_info", "/get_server_info"})
HTTP_ANSWERS = frozenset({"ok", "starting", "http_error"})

_ORDER = {phase: i for i, phase in enumerate(PHASE_ORDER)}
_T = TypeVar("_T")
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
    return s.evolve(
        phase=target,
        phase_since=now,
        phase_since_log=at,
        timeline=enter_phase(s.timeline, target, at, t, now),
    )


def _fail(s: Readiness, at: str | None, t: float | None, now: float) -> Readiness:
    if s.phase is Phase.FAILED:
        return s
    return s.evolve(
        phase=Phase.FAILED,
        phase_since=now,
        phase_since_log=at,
        timeline=enter_phase(s.timeline, Phase.FAILED, at, t, now),
        launched=True,
    )


def _maybe_ready(s: Readiness, at: str | None, t: float | None, now: float) -> Readiness:
    """Ready needs this server's /health 200; the log's fired-up line alone only when /health is not probed."""
    if s.phase in (Phase.READY, Phase.SERVING, Phase.FAILED):
        return s
    if (s.log_ready or s.health_ready) and _may_be_ready(s):
        return _advance(s, Phase.READY, at, t, now)
    return s


def _may_be_ready(s: Readiness) -> bool:
    """Whether the facts allow ready (or serving) now.

    Dead is never ready. A /health 200 counts when it is this server's (see tui.core.answerer). Without one,
    the log alone decides only where /health is not probed: by choice (--no-health: then the process must be
    seen alive) or not at all (replay: no /health result ever arrived).
    """
    if s.process_alive is False and s.launched:
        return False
    if s.health_ready:
        return answerer(s)[0] == OURS
    if health_probed(s):
        return False
    return s.health_probed is None or s.process_alive is True


def health_probed(s: Readiness) -> bool:
    """/health is probed: the caller said so, or (not told) an HTTP probe result arrived."""
    if s.health_probed is not None:
        return s.health_probed
    return bool(s.health_checked_at)


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
        launch=LaunchFacts(
            phase_since=now,
            phase_since_log=at,
            first_seen_at=s.first_seen_at,
            timeline=enter_phase((), Phase.STARTING, at, t, now),
            launches=s.launches + 1 if counts else s.launches,
            launched=launched,
            log_restart_at=now if from_log else s.log_restart_at,
        ),
        # what the probes last answered is kept for display; health_ready waits for a 200 after this
        probes=HealthFacts(health=s.health, health_checked_at=s.health_checked_at, health_reachable=s.health_reachable),
        gpu=s.gpu,
        link=replace(s.link, source_failures=()),
        # what the poll said was of the old launch: this one's processes are not found yet. Who can see whose
        # /proc, and who listens on the port, are not the launch's.
        proc=ProcessFacts(
            process_visible=s.process_visible, process_owner_uid=s.process_owner_uid, port_owner=s.port_owner
        ),
        control=s.control,
        progress=ProgressFacts(
            last_progress_at=now,
            last_progress=why,
            log_offset=s.log_offset if log_offset is None else log_offset,
            last_log_at=at or s.last_log_at,
            log_file=s.log_file,
        ),
        setup=s.setup,  # past included: the caller replaces it when the new launch's key differs
        updated_at=s.updated_at,
    )


# ------------------------------------------------------------------------------------------- log events


def _log_seen(
    s: Readiness,
    at: str | None,
    now: float,
    rank: str | None = None,
    what: str = "log line",
    tp_rank: int | None = None,
) -> Readiness:
    """Any parsed log event is progress (it came from new log bytes) and may name a rank."""
    changes: dict[str, object] = {"last_progress_at": now, "last_progress": what}
    if at:
        changes["last_log_at"] = at
    index = tp_rank if tp_rank is not None else (tp_index(rank) if rank else None)
    if index is not None and (s.tp_rank_max is None or index > s.tp_rank_max):
        changes["tp_rank_max"] = index
    if index is not None and index not in s.tp_ranks_seen:
        seen = tuple(sorted(s.tp_ranks_seen + (index,)))
        changes["tp_ranks_seen"] = seen
        if not s.server.tp_from_args and index >= 1:  # a lone TP0 tag says TP > 1, not how many
            size, how = infer_tp_size(seen)
            changes["server"] = replace(s.server, tp_size=size)
            changes["tp_inferred"] = how
    return s.evolve(**changes)


def infer_tp_size(seen: tuple[int, ...]) -> tuple[int | None, str]:
    """TP size from the TP indexes seen (sorted), with no server_args: (size or None, how it was inferred).

    The highest index + 1 when that is a usual TP size (a power of two: TP splits the attention heads), when
    every index below it was seen, or as a lower bound when several ranks show; a lone TP2 (a traceback of one
    rank) says only "at least 3 ranks", which is no size."""
    top = seen[-1]
    size = top + 1
    if size & (size - 1) == 0:
        return size, f"inferred: highest rank seen is TP{top}"
    if len(seen) == size:
        return size, f"inferred: ranks TP0..TP{top} seen"
    if len(seen) >= 2:
        return size, f"inferred: at least {size} ranks (highest seen TP{top})"
    return None, ""


def _tp_one(s: Readiness, ev: Milestone, why: str = TP_ONE_REASON) -> Readiness:
    """A per-rank startup line of TP0 (or with no TP tag at all) and no other rank seen: TP is 1 (inferred,
    until another rank shows)."""
    seen = (0,) if why == TP_ONE_REASON else ()
    if s.server.tp_from_args or s.server.tp_size is not None or s.tp_ranks_seen != seen or ev.draft:
        return s
    return s.evolve(server=replace(s.server, tp_size=1), tp_inferred=why)


def untagged_scheduler_line(ev: Milestone) -> bool:
    """A scheduler's line in SGLang's own `[time]` envelope with no rank label (not a foreign format that drops
    the labels): 0.5.x prints the TP token only when TP > 1."""
    return ev.at is not None and ev.line.startswith("[") and ev.line[1:2].isdigit()


def _on_rank_seen(s: Readiness, ev: RankSeen, now: float) -> Readiness:
    return _log_seen(s, ev.at, now, ev.rank, what="log: rank line", tp_rank=ev.tp_rank)


def _on_server_args(s: Readiness, ev: ServerArgs, now: float) -> Readiness:
    if s.launched and s.phase is not Phase.STARTING:
        s = _fresh_launch(s, ev.at, ev.t, now)  # a relaunch the parser could not see (log truncated or rotated)
    s = _log_seen(s, ev.at, now, what="server_args")
    server = s.server
    tp_size = ev.tp_size if ev.tp_size is not None else server.tp_size
    s = s.evolve(
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
            version=_first(ev.version, server.version),
            args_hash=_first(ev.args_hash, server.args_hash),
        ),
    )
    if not s.timeline and s.phase is Phase.STARTING:
        s = s.evolve(timeline=enter_phase((), Phase.STARTING, ev.at, ev.t, now), phase_since=now, phase_since_log=ev.at)
    return s


def _first(a: _T | None, b: _T | None) -> _T | None:
    return a if a is not None else b


def _on_launch(s: Readiness, ev: LaunchStarted, now: float) -> Readiness:
    return _fresh_launch(s, ev.at, ev.t, now)


def _on_milestone(s: Readiness, ev: Milestone, now: float) -> Readiness:
    rank = ev.rank or ("TP0" if ev.kind in SCHEDULER_KINDS else None)
    s = _log_seen(s, ev.at, now, ev.rank, what=f"log: {ev.kind}")
    if ev.kind in SHUTDOWN_KINDS:  # a signal asked it to stop: says why, when the process goes
        return s if s.shutdown is not None else s.evolve(shutdown=ev)
    if ev.kind in PER_RANK_KINDS and ev.rank is not None and tp_index(ev.rank) == 0:
        s = _tp_one(s, ev)
    elif ev.kind in PER_RANK_KINDS and ev.rank is None and untagged_scheduler_line(ev):
        s = _tp_one(s, ev, TP_UNTAGGED_REASON)
    s = _shape_facts(s, ev)
    if rank:
        s = s.evolve(ranks=_update_rank(s.ranks, rank, ev, now))
    if ev.draft:
        span = DRAFT_SPANS.get(ev.kind)
        if span is not None:
            phase, begins = span
            opener = open_draft if begins else close_draft
            s = s.evolve(timeline=opener(s.timeline, phase, ev.at, ev.t, now))
        return s
    s = s.evolve(latest_milestone=ev, milestone_ranks=_add_rank(s.milestone_ranks, ev.kind, rank))
    if ev.kind == "startup_timings":
        s = s.evolve(startup_timings=tuple((k, float(v)) for k, v in ev.fields if isinstance(v, (int, float))))
    if ev.kind in MILESTONE_PHASE or ev.kind == "fired_up":
        s = s.evolve(launched=True)
    if ev.kind == "fired_up":
        ready_at = s.log_ready_at if s.log_ready else now
        return _maybe_ready(s.evolve(log_ready=True, log_ready_at=ready_at), ev.at, ev.t, now)
    target = MILESTONE_PHASE.get(ev.kind)
    return _advance(s, target, ev.at, ev.t, now) if target is not None else s


def _shape_facts(s: Readiness, ev: Milestone) -> Readiness:
    """The facts the 0.5.14 … 0.5.23 lines carry (DeepGEMM JIT, HTTP server, PD, EPLB, HF snapshot, weight cache)."""
    kind = ev.kind
    if kind == "jit_begin":
        return s.evolve(jit_active=True)
    if kind == "jit_kernel":
        return s.evolve(
            jit_active=True, jit_kernels=s.jit_kernels + 1, last_progress=f"DeepGEMM JIT kernel {s.jit_kernels + 1}"
        )
    if kind in ("jit_end", "graph_end", "max_tokens", "fired_up"):
        s = s.evolve(jit_active=False) if s.jit_active else s
        return s.evolve(http_server=s.http_server or "uvicorn") if kind == "fired_up" else s
    if kind == "uvicorn_running":
        workers = ev.get("workers")
        return s.evolve(http_server="uvicorn", http_workers=workers if isinstance(workers, int) else s.http_workers)
    if kind == "http_running":
        return s.evolve(http_server=str(ev.get("server") or "other"))
    if kind == "pd_bootstrap":
        return s.evolve(pd_bootstrap=True)
    if kind == "pd_warmup_begin":
        return s.evolve(pd_warmup="running")
    if kind == "pd_warmup_end":
        return s.evolve(pd_warmup="ok" if ev.get("ok", True) else "failed")
    if kind == "eplb_begin":
        return s.evolve(eplb_rebalancing=True, last_progress="EPLB rebalance")
    if kind == "eplb_end":
        return s.evolve(eplb_rebalancing=False, eplb_rebalances=s.eplb_rebalances + 1)
    if kind == "hf_snapshot":
        return s.evolve(hf_snapshot="local" if ev.get("local") else "download")
    if kind == "weight_cache":
        return s.evolve(weight_cache=_weight_cache(s.weight_cache, ev))
    return s


def _weight_cache(old: WeightCacheInfo | None, ev: Milestone) -> WeightCacheInfo:
    info = old or WeightCacheInfo()
    role, pid, mode = ev.get("role"), ev.get("pid"), ev.get("mode")
    if isinstance(pid, int) and pid not in info.pids:
        info = replace(info, pids=info.pids + (pid,))
    if role == "launching":  # the engine launches its own daemons: co-terminal with it
        info = replace(info, mode=info.mode or "daemon")
    if isinstance(mode, str):
        info = replace(info, mode=mode)
    if ev.get("standalone") is True and info.mode != "daemon":  # not when this engine launched its own
        info = replace(info, standalone=True)
    return info


def _on_bar(s: Readiness, ev: BarProgress, now: float) -> Readiness:
    s = _log_seen(s, ev.at, now, ev.rank, what=f"log: {ev.bar} bar")
    when, clock = _bar_time(ev, now)
    if ev.bar == "weights":  # the parser decides which bars and loads are the draft model's
        old = s.shards
        if old is None or old.total != ev.total:
            bar = start_bar(ev.done, ev.total, when, clock, now, label=ev.label)
        else:
            bar = advance_bar(old, ev.done, when, clock, now)
        if bar.rate_per_s is None and ev.remaining_s is not None and not is_complete(bar):
            bar = replace(bar, eta_s=ev.remaining_s)  # tqdm's own estimate until we have a rate
        s = s.evolve(shards=bar, launched=True)
        if old is None or bar.done != old.done:
            s = s.evolve(last_progress=f"shards {bar.done}/{bar.total}")
        return _advance(s, Phase.LOADING_WEIGHTS, ev.at, ev.t, now)
    if ev.bar == "draft_weights":
        return _draft_bar(s, ev, when, clock, now)
    if ev.bar in ("capture", "piecewise") and ev.done > 0 and s.jit_active:
        s = s.evolve(jit_active=False)  # a graph captured: the JIT compile that its first forward ran is over
    if ev.bar in BAR_FIELDS:
        return _other_bar(s, ev, when, clock, now)
    if ev.bar == "capture":
        old = s.capture
        extra = {"bs": ev.bs, "avail_mem_gb": ev.avail_mem_gb, "label": ev.label}
        if old is None or old.total != ev.total or ev.done < old.done:
            bar = start_bar(ev.done, ev.total, when, clock, now, **extra)
        else:
            bar = advance_bar(old, ev.done, when, clock, now, **extra)
        s = s.evolve(capture=bar, launched=True)
        if bar != old:
            s = s.evolve(last_progress=f"capture {bar.done}/{bar.total}")
        return _advance(s, Phase.CUDA_GRAPH, ev.at, ev.t, now)
    return s


def _other_bar(s: Readiness, ev: BarProgress, when: float, clock: str, now: float) -> Readiness:
    """Piecewise capture, DeepGEMM JIT and warmup bars: each its own progress (a new bar when the total changes)."""
    name = BAR_FIELDS[ev.bar]
    old: BarState | None = getattr(s, name)
    extra = {"bs": ev.bs, "avail_mem_gb": ev.avail_mem_gb, "label": ev.label}
    if old is None or old.total != ev.total or ev.done < old.done:
        bar = start_bar(ev.done, ev.total, when, clock, now, **extra)
    else:
        bar = advance_bar(old, ev.done, when, clock, now, **extra)
    s = s.evolve(launched=True, **{name: bar})
    if bar != old:
        s = s.evolve(last_progress=f"{ev.label or ev.bar} {bar.done}/{bar.total}")
    if ev.bar == "jit" and not s.jit_active:
        s = s.evolve(jit_active=True)
    target = BAR_PHASE[ev.bar]
    return _advance(s, target, ev.at, ev.t, now) if target is not None else s


def _bar_time(ev: BarProgress, now: float) -> tuple[float, str]:
    """The time axis of a bar's rate: tqdm's own elapsed (printed in the frame, 1 s steps), else log time, else now."""
    if ev.elapsed_s is not None:
        return ev.elapsed_s, "tqdm"
    if ev.t is not None:
        return ev.t, "log"
    return now, "clock"


def _draft_bar(s: Readiness, ev: BarProgress, when: float, clock: str, now: float) -> Readiness:
    old = s.draft_shards
    if old is None or old.total != ev.total or (is_complete(old) and ev.done < old.done):
        bar = start_bar(ev.done, ev.total, when, clock, now, label=ev.label)
    else:
        bar = advance_bar(old, ev.done, when, clock, now)
    timeline = open_draft(s.timeline, Phase.LOADING_WEIGHTS, ev.at, ev.t, now)
    if is_complete(bar):
        timeline = close_draft(timeline, Phase.LOADING_WEIGHTS, ev.at, ev.t, now)
    s = s.evolve(draft_shards=bar, timeline=timeline, launched=True)
    if old is None or bar.done != old.done:
        s = s.evolve(last_progress=f"draft shards {bar.done}/{bar.total}")
    return s


def _on_failure(s: Readiness, ev: Failure, now: float) -> Readiness:
    s = _log_seen(s, ev.at, now, ev.rank, what="log: failure")
    if s.phase is not Phase.FAILED and not _stopped_by_us(s, now):
        if s.shutdown is not None:  # a traceback of the shutdown a signal asked for: its noise, not a cause
            return _stopped_from_outside(s, s.shutdown.line, s.shutdown.at, ev.t, now)
        if _is_interrupt(ev):  # Ctrl-C (SIGINT) from someone: a stop from outside, not a crash
            return _stopped_from_outside(s, ev.line, ev.at, ev.t, now)
    old = s.error
    if old is None or (ev.root_cause and not old.root_cause) or _marker_outranks(old, ev):
        s = s.evolve(error=ErrorInfo(kind=ev.kind, line=ev.line, at=ev.at, root_cause=ev.root_cause))
    return _fail(s, ev.at, ev.t, now)


def _marker_outranks(old: ErrorInfo, ev: Failure) -> bool:
    """A scheduler's exception marker says more than a generic "other" one printed before it (`Received sigquit
    from a child process` is the parent reacting to the child's exception, which is the cause)."""
    return not old.root_cause and not ev.root_cause and old.kind == "other" and ev.kind != "other"


def _is_interrupt(ev: Failure) -> bool:
    return ev.line.rstrip().endswith("KeyboardInterrupt")


def _on_batch(s: Readiness, ev: BatchStats, now: float) -> Readiness:
    s = _log_seen(s, ev.at, now, ev.rank, what=f"log: {ev.stage} batch")
    if ev.stage != "decode":
        # A prefill is a request being served (the parser keeps health checks' 1-token prefills out): a log slice
        # of prefills only, or one after ready. Before fired up it is the warmup's own request.
        if ev.stage == "prefill" and (s.phase is Phase.READY or (s.phase is Phase.STARTING and _traffic(s, ev))):
            return _advance(s, Phase.SERVING, ev.at, ev.t, now)
        if ev.stage == "prefill":
            return s.evolve(prefill_lines=s.prefill_lines + ev.count)
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
    s = s.evolve(decode=decode, decode_history=history)
    if ev.accept_len is not None and not s.server.speculative:
        s = s.evolve(server=replace(s.server, speculative="unknown"))
    if ev.running_req is not None and ev.running_req <= 0:
        return s
    # Decoding requests: the server serves (a log attached mid-run shows nothing else).
    if s.phase is Phase.READY or (s.phase in (Phase.STARTING, Phase.WARMUP) and _may_be_ready(s)):
        return _advance(s, Phase.SERVING, ev.at, ev.t, now)
    return s


def _traffic(s: Readiness, ev: BatchStats) -> bool:
    """Prefills with no startup in view are requests being served, unless they may be the warmup's one request:
    more than one prefill line, or one that shows other requests (running, queued, tokens in use)."""
    busy = (ev.running_req or 0) > 0 or (ev.queue_req or 0) > 0 or (ev.token_usage or 0.0) > 0.0
    return busy or s.prefill_lines + ev.count >= 2


def _on_hint(s: Readiness, ev: SpeculativeHint, now: float) -> Readiness:
    s = _log_seen(s, ev.at, now, what="log: speculative hint")
    current = s.server.speculative
    if current and current != "unknown":
        return s
    return s.evolve(server=replace(s.server, speculative=ev.algorithm or "unknown"))


# ---------------------------------------------------------------------------------------- source events


def _on_log_activity(s: Readiness, ev: LogActivity, now: float) -> Readiness:
    if ev.offset == s.log_offset and not ev.data:
        return s
    if ev.data and s.log_file is not None and s.log_file.status in ("missing", "empty"):
        s = s.evolve(log_file=replace(s.log_file, status="ok"))  # bytes arrived: it is neither any more
    grew = now if ev.data else s.log_grew_at
    return s.evolve(log_offset=ev.offset, last_progress_at=now, last_progress="log bytes", log_grew_at=grew)


def _on_log_file(s: Readiness, ev: LogFile, now: float) -> Readiness:
    """What the log path is: a fact for the verdict; it changes no phase."""
    return s.evolve(log_file=ev)


def _on_log_reset(s: Readiness, ev: LogReset, now: float) -> Readiness:
    """A truncated or rotated log is a new start (the monitor's fresh parser will not say LaunchStarted)."""
    if ev.reason in NEW_FILE_RESETS:
        return _fresh_launch(
            s, None, None, now, why=f"log {ev.reason}", counts=False, launched=_launched_by_us(s, now), log_offset=0
        )
    if ev.reason in ("missing", "appeared"):
        return s.evolve(log_offset=0)
    return s


def _on_gpus(s: Readiness, ev: GpuSnapshot, now: float) -> Readiness:
    if ev.error is not None or not ev.gpus:
        return s.evolve(gpus=ev, gpus_at=now)
    changes: dict[str, object] = {"gpus": ev, "gpus_at": now, "gpu_history": _gpu_history(s.gpu_history, ev)}
    changes["gpu_util_history"] = _gpu_util_history(s.gpu_util_history, ev)
    changes["gpu_history_at"] = (s.gpu_history_at + (now,))[-GPU_HISTORY:]
    if _memory_moved(s.gpus, ev):
        changes["last_progress_at"] = now
        changes["last_progress"] = "GPU memory"
    if s.phase is Phase.LOADING_WEIGHTS:
        changes["weights_mem"] = weights_memory(s.weights_mem, s.gpus, ev, _server_gpus(s), now)
    s = s.evolve(**changes)
    return s.evolve(ranks=_map_ranks(s, ev))


def _server_gpus(s: Readiness) -> frozenset[int] | None:
    """The GPUs the server's ranks run on, when the ranks are mapped; None: every GPU of the probe."""
    found = frozenset(r.gpu_index for r in s.ranks if r.gpu_index is not None)
    return found or None


def _on_health(s: Readiness, ev: HealthResult, now: float) -> Readiness:
    results = tuple(r for r in s.health if r.endpoint != ev.endpoint) + (ev,)
    checked = tuple(c for c in s.health_checked_at if c[0] != ev.endpoint) + ((ev.endpoint, now),)
    reachable = any(_http_answer(r) for r in results)
    s = s.evolve(health=results, health_checked_at=checked, health_reachable=reachable)
    if ev.endpoint == "/health":
        since = (s.health_ok_since if s.health_ready else now) if ev.outcome == "ok" else None
        s = s.evolve(health_ready=ev.outcome == "ok", health_ok_since=since)
    if ev.outcome == "ok" and ev.endpoint in HTTP_UP_ENDPOINTS and s.phase is Phase.STARTING and not s.log_watched:
        # uvicorn is up: warmup at most, never ready (with a log watched, the log decides the phase: what
        # answers before it shows a launch may be a server from before)
        s = _advance(s, Phase.WARMUP, None, None, now)
    return _maybe_ready(s, None, None, now)


def _on_server_info(s: Readiness, ev: ServerInfoAnswer, now: float) -> Readiness:
    """The one /server_info read: the version (what answers knows it best) and 0.5.23's startup_time figures.
    An answer naming another model is not this launch's (the identity probe decides whose the 200 is)."""
    s = s.evolve(server_info=ev.outcome)
    if ev.outcome != "ok":
        return s
    if ev.model_path and s.server.model and not same_model(ev.model_path, s.server.model):
        return s.evolve(server_info="foreign")
    server = replace(s.server, version=ev.version) if ev.version and ev.version != s.server.version else s.server
    return s.evolve(server=server, startup_time=ev.startup_time or s.startup_time)


def _http_answer(r: HealthResult) -> bool:
    return r.outcome in HTTP_ANSWERS or (r.outcome == "garbage" and r.status is not None)


def _on_activity(s: Readiness, ev: HostActivity, now: float) -> Readiness:
    """A sample of what the processes do beyond the log: anything that moved is progress (issue 13)."""
    activity = host_activity.fold(s.activity, ev, now, named=s.jit_named)
    if activity.moved:
        return s.evolve(activity=activity, last_progress_at=now, last_progress=activity.moved)
    return s.evolve(activity=activity)


WATCHDOG_STACKS = 64


def _on_jit_hint(s: Readiness, ev: JitHint, now: float) -> Readiness:
    return s.evolve(jit_named=ev.kind)


def _on_watchdog_dump(s: Readiness, ev: WatchdogDump, now: float) -> Readiness:
    """SGLang's own py-spy dump: kept under its rank (the dumped process's title, else the line's prefix);
    neither an error nor progress."""
    kept = {p.name: p for p in s.watchdog_stacks}
    for p in stacks.parse_pyspy(ev.text) or [stacks.ProcessStack(ev.pid)]:
        name = stacks.label(p.pid, p.cmdline, None)
        if name.startswith("pid ") and ev.rank:
            name = ev.rank
        kept.pop(name, None)
        kept[name] = stacks.ProcessStack(p.pid, name, p.cmdline, p.threads)
    return s.evolve(watchdog_stacks=tuple(kept.values())[-WATCHDOG_STACKS:])


def _on_process(s: Readiness, ev: ServerProcess, now: float) -> Readiness:
    """No process of the server left: failed in any phase (not stalled, and not ready whatever the log said).

    Only `alive is False` from a watch that can see the processes means dead; an unseen process is unknown.
    """
    if not ev.visible:  # what cannot be seen is unknown, never gone: readiness rests on the log and /health
        return s.evolve(process_alive=None, process_pids=(), process_visible=False, process_owner_uid=ev.owner_uid)
    if ev.alive is None:  # a watch that cannot tell: unknown, never dead
        return s.evolve(process_alive=None, process_pids=ev.pids)  # type: ignore[unreachable]
    if not s.process_visible:
        s = s.evolve(process_visible=True, process_owner_uid=None)
    if ev.activity is not None and ev.alive:
        s = _on_activity(s, ev.activity, now)
    if not ev.alive and _not_found_yet(s, now):
        return s.evolve(process_alive=None, process_pids=())  # unknown, not gone: it may just not be found yet
    s = s.evolve(process_alive=ev.alive, process_pids=ev.pids)
    if ev.alive:
        return _maybe_ready(s, None, None, now)  # --no-health: the log's fired up waits for a live process
    if not (s.launched or s.timeline) or s.phase is Phase.FAILED:
        return s
    if _stopped_by_us(s, now):
        return _stopped(s, s.last_control.action, now)  # type: ignore[union-attr]
    if s.shutdown is not None:  # the log said a signal stopped it, and we sent none
        return _stopped_from_outside(s, s.shutdown.line, s.shutdown.at, None, now)
    return _fail(s.evolve(error=ErrorInfo(kind="other", line=PROCESS_EXITED, root_cause=False)), None, None, now)


def _stopped_from_outside(s: Readiness, line: str, at: str | None, t: float | None, now: float) -> Readiness:
    """Failed because a signal from someone else stopped it (SIGTERM, Ctrl-C): that line says why."""
    error = ErrorInfo(kind="other", line=line, at=at, root_cause=True, stopped_by="outside")
    return _fail(s.evolve(error=error), at, t, now)


def _on_port_owner(s: Readiness, ev: PortOwner, now: float) -> Readiness:
    """Who listens on the port: a listener outside the server's processes makes a /health 200 not ours."""
    return _maybe_ready(s.evolve(port_owner=ev), None, None, now)


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
    if old is None or not old.root_cause or from_processes(old) or old.stopped_by == "outside":
        s = s.evolve(error=ErrorInfo(kind="other", line=stopped_line(action), root_cause=True, stopped_by="sglang-tui"))
    return _fail(s, None, None, now)


def _on_connection(s: Readiness, ev: ConnectionState, now: float) -> Readiness:
    since = s.connection_since if ev.state == s.connection and s.connection_since is not None else now
    return s.evolve(connection=ev.state, connection_detail=ev.detail, connection_since=since)


def _on_control(s: Readiness, ev: ControlResult, now: float) -> Readiness:
    """Our own launch/restart is a new start (unless the log already showed it); our own stop ends the launch."""
    if ev.ok and ev.action in LAUNCH_ACTIONS:
        shown = (
            s.log_restart_at is not None
            and now - s.log_restart_at <= LAUNCH_WINDOW_S
            and (s.last_control_at is None or s.log_restart_at >= s.last_control_at)
        )
        if not shown:
            s = _fresh_launch(s, None, None, now, why=f"{ev.action} by sglang-tui", counts=False, from_log=False)
        return s.evolve(last_control=ev, last_control_at=now, launched=True)
    s = s.evolve(last_control=ev, last_control_at=now)
    if ev.ok and ev.action in STOP_ACTIONS and (s.launched or s.timeline):
        return _stopped(s.evolve(process_alive=False, process_pids=()), ev.action, now)
    return s


def _on_tick(s: Readiness, ev: Tick, now: float) -> Readiness:
    return s


def _on_source_failed(s: Readiness, ev: SourceFailed, now: float) -> Readiness:
    """A source's worker crashed: kept under that source only; no other fact (health, process, phase) moves."""
    kept = tuple(f for f in s.source_failures if f[0] != ev.source)
    return s.evolve(source_failures=(*kept, (ev.source, ev.message, now)))


def _on_weight_files(s: Readiness, ev: WeightFiles, now: float) -> Readiness:
    if ev.total_bytes is None or ev.total_bytes <= 0:
        return s
    return s.evolve(weight_files=(ev.model, ev.total_bytes, ev.files))


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
    LogFile: _on_log_file,  # type: ignore[dict-item]
    GpuSnapshot: _on_gpus,  # type: ignore[dict-item]
    HealthResult: _on_health,  # type: ignore[dict-item]
    ServerInfoAnswer: _on_server_info,  # type: ignore[dict-item]
    ServerProcess: _on_process,  # type: ignore[dict-item]
    ConnectionState: _on_connection,  # type: ignore[dict-item]
    ControlResult: _on_control,  # type: ignore[dict-item]
    PortOwner: _on_port_owner,  # type: ignore[dict-item]
    Tick: _on_tick,  # type: ignore[dict-item]
    SourceFailed: _on_source_failed,  # type: ignore[dict-item]
    HostActivity: _on_activity,  # type: ignore[dict-item]
    WatchdogDump: _on_watchdog_dump,  # type: ignore[dict-item]
    JitHint: _on_jit_hint,  # type: ignore[dict-item]
    WeightFiles: _on_weight_files,  # type: ignore[dict-item]
}


# ------------------------------------------------------------------------------------------------ finish


def _finish(s: Readiness, now: float) -> Readiness:
    """Stamp the clock and apply the stall rule. The words (reason, evidence) are the views' (explain)."""
    if s.first_seen_at is None:  # the first event: the phase began no earlier than now (not at clock 0)
        s = s.evolve(first_seen_at=now, phase_since=now)
    stall = stall_for(s, now)
    if stall != s.stall:
        s = s.evolve(stall=stall)
    return replace(s, updated_at=now)


# ------------------------------------------------------------------------------------------------- ranks


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
    return tuple(sorted(others + (new,), key=lambda r: sort_key(r.name)))


def _add_rank(
    table: tuple[tuple[str, tuple[str, ...]], ...], kind: str, rank: str | None
) -> tuple[tuple[str, tuple[str, ...]], ...]:
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
    return tuple(sorted(by_name.values(), key=lambda r: sort_key(r.name)))


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


def _gpu_history(
    history: tuple[tuple[int, tuple[float, ...]], ...], snap: GpuSnapshot
) -> tuple[tuple[int, tuple[float, ...]], ...]:
    table = dict(history)
    for g in snap.gpus:
        if g.used_bytes is None or not g.total_bytes:
            continue
        table[g.index] = (table.get(g.index, ()) + (g.used_bytes / g.total_bytes,))[-GPU_HISTORY:]
    return tuple(sorted(table.items()))


def _gpu_util_history(
    history: tuple[tuple[int, tuple[float | None, ...]], ...], snap: GpuSnapshot
) -> tuple[tuple[int, tuple[float | None, ...]], ...]:
    """Each GPU's recent utilisation (%), one value per sample (None where the probe had none), bounded."""
    table = dict(history)
    for g in snap.gpus:
        table[g.index] = (table.get(g.index, ()) + (g.util_pct,))[-GPU_HISTORY:]
    return tuple(sorted(table.items()))
