"""What the log's lines say: milestones and the phase they show, the TP size the rank labels show, failures, batches, the 0.5.14 … 0.5.23 shapes, SGLang's own py-spy dumps."""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from tui.core import clocks, stacks
from tui.core.capture import capture_bar_of
from tui.core.events import (
    BatchStats,
    Failure,
    JitHint,
    Milestone,
    RankSeen,
    ServerArgs,
    SpeculativeHint,
    WatchdogDump,
)
from tui.core.fold_launch import fresh_launch, stopped_by_us, stopped_from_outside
from tui.core.fold_phase import advance, fail, may_be_ready, maybe_ready
from tui.core.fold_ranks import add_rank, update_rank
from tui.core.fold_window import launch_in_view
from tui.core.ranklabels import tp_index
from tui.core.state import (
    DecodeInfo,
    ErrorInfo,
    Facts,
    Phase,
    Readiness,
    ServerInfo,
    WeightCacheInfo,
)
from tui.core.timeline import close_draft, enter_phase, open_draft

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
    # Kinds that place a window of the log that starts mid-run (each the least phase its line proves; forward only,
    # so in a whole log they move nothing): tui.core.logshapes names where SGLang prints each.
    "unbalanced_memory": Phase.INIT,  # the memory check of distributed init
    "load_step": Phase.LOADING_WEIGHTS,
    "load_straggler": Phase.LOADING_WEIGHTS,
    "kernel_autotune": Phase.KV_CACHE,  # FlashInfer autotune: after the KV pool, before capture
    "jit_begin": Phase.KV_CACHE,  # DeepGEMM JIT runs at the first forward: the KV pool exists by then
    "jit_kernel": Phase.KV_CACHE,
    "jit_end": Phase.KV_CACHE,
    "max_tokens": Phase.KV_CACHE,  # the scheduler's last line: its KV pool is sized (capture may be off)
    "startup_timings": Phase.KV_CACHE,
    "graph_step": Phase.CUDA_GRAPH,
    "compile_autotune": Phase.CUDA_GRAPH,  # torch.compile (Inductor), which SGLang runs inside capture
}


# Lines only a serving server prints (an EPLB rebalance every N forward passes, retracting requests when the KV pool
# is full): serving, by the readiness rule; HTTP up at least.
SERVING_KINDS = frozenset({"eplb_begin", "eplb_end", "retract"})


# Access lines outside a warmup in view (the parser reports the first of each): HTTP is up; a /health 200 (what a
# Kubernetes probe writes) says the server answered up, which counts like "fired up" (ready needs this server's
# own /health 200 wherever /health is probed).
ACCESS_KINDS = frozenset({"http_access", "health_access", "request_log"})


SHUTDOWN_KINDS = frozenset({"shutdown"})  # the log's "SIGTERM received …" / uvicorn's "Shutting down"


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


DECODE_HISTORY = 120


WATCHDOG_STACKS = 64


_T = TypeVar("_T")


def log_seen(
    s: Readiness,
    at: str | None,
    now: float,
    rank: str | None = None,
    what: str = "log line",
    tp_rank: int | None = None,
    t: float | None = None,
) -> Readiness:
    """Any parsed log event is progress (it came from new log bytes), at the time the log says (tui.core.clocks),
    and may name a rank."""
    changes: Facts = progressed(s, at, t, now, what)
    if at:
        changes["last_log_at"] = at
    if t is not None:
        changes["last_log_t"] = t
    index = tp_rank if tp_rank is not None else (tp_index(rank) if rank else None)
    if index is not None and (s.tp_rank_max is None or index > s.tp_rank_max):
        changes["tp_rank_max"] = index
    relabel = False
    if index is not None and index not in s.tp_ranks_seen:
        changes["tp_ranks_seen"] = tuple(sorted(s.tp_ranks_seen + (index,)))
        relabel = index >= 1  # a lone TP0 tag says TP > 1, not how many
    if rank is not None and not s.pp_seen and "PP" in rank:
        changes["pp_seen"] = True
        relabel = True
    s = s.evolve(**changes)
    return with_log_tp(s) if relabel else s


def with_log_tp(s: Readiness) -> Readiness:
    """The TP size the log shows, when server_args did not say it (log_tp)."""
    if s.server.tp_from_args:
        return s
    size, how = log_tp(s)
    if size == s.server.tp_size and how == s.tp_inferred:
        return s
    return s.evolve(server=replace(s.server, tp_size=size), tp_inferred=how)


def log_tp(s: Readiness) -> tuple[int | None, str]:
    """(size, how) from the log alone. The largest NCCL communicator (`nranks N`) is the server's world, TP × PP, so
    it states TP when PP is 1 (no rank label carries PP) and it holds every TP rank the labels name; the labels
    alone (infer_tp_size) only where the TP group does not span nodes: then one node's log shows part of it, and
    how many ranks the other nodes hold, no line of this log says."""
    seen = s.tp_ranks_seen
    n = s.tp_nranks
    if n is not None and seen and not s.pp_seen and n > seen[-1] and (not s.tp_spans_nodes or n > len(seen)):
        return n, f"inferred: NCCL communicator of {n} ranks"
    if s.tp_spans_nodes:
        return None, ""
    if seen and seen[-1] >= 1:
        return infer_tp_size(seen)
    return s.server.tp_size, s.tp_inferred


def progressed(s: Readiness, at: str | None, t: float | None, now: float, what: str) -> Facts:
    """The progress facts a log event gives: when it happened on our clock (and that the log said it).
    An event of the history read at a look never moves the last progress back; a live line teaches the zone
    when no look could."""
    changes: Facts = {"last_progress": what}
    clock = s.clock
    if clock is not None and clock.zone_s is None and t is not None and clocks.live(s):
        s = s.evolve(clock=clocks.learn_live(clock, t, now))
        changes["clock"] = s.clock
    when = clocks.event_time(s, t, now)
    if s.reading_history and s.last_progress_at is not None and when < s.last_progress_at:
        return changes
    changes["last_progress_at"] = when
    changes["last_progress_logged"] = True
    changes["last_progress_log"] = at
    return changes


def infer_tp_size(seen: tuple[int, ...]) -> tuple[int | None, str]:
    """TP size from the TP indexes seen (sorted), with no server_args: (size or None, how it was inferred).

    Rank tags are a lower bound (a slice of a TP16 job may show TP0–TP14 only; one node of a multi-node group shows
    its own ranks, TP24–TP31 on the fourth), so a size only where one node's ranks tell it: the highest index + 1 is
    a power of two (TP splits the attention heads) of at most 8 (one node's GPUs), and either every index below it was
    seen or it is TP7 (the last GPU of an 8-GPU node; a lone TP3 may be a TP8's). Else None: the views say the bound
    (tui.core.ranklabels.tp_floor)."""
    top = seen[-1]
    size = top + 1
    if size & (size - 1) == 0 and size <= _ONE_NODE and (size == _ONE_NODE or len(seen) == size):
        return size, f"inferred: highest rank seen is TP{top}"
    return None, ""


_ONE_NODE = 8  # GPUs of the usual node: a rank tag above TP7 may be another node's


def tp_one(s: Readiness, ev: Milestone, why: str = TP_ONE_REASON) -> Readiness:
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


def on_rank_seen(s: Readiness, ev: RankSeen, now: float) -> Readiness:
    """A rank's line: its scheduler runs, so the launch is at least in init (what else it shows, its kind says)."""
    s = log_seen(s, ev.at, now, ev.rank, what="log: rank line", tp_rank=ev.tp_rank, t=ev.t)
    return advance(s.evolve(launched=True), Phase.INIT, ev.at, ev.t, now)


def on_server_args(s: Readiness, ev: ServerArgs, now: float) -> Readiness:
    if ev.stated_only:
        return stated_args(s, ev)
    if s.launched and s.phase is not Phase.STARTING:
        s = fresh_launch(s, ev.at, ev.t, now)  # a relaunch the parser could not see (log truncated or rotated)
    s = log_seen(s, ev.at, now, what="server_args", t=ev.t)
    server = s.server
    tp_size = ev.tp_size if ev.tp_size is not None else server.tp_size
    s = s.evolve(
        launched=True,
        launch_line=True,
        server=ServerInfo(
            model=ev.model or server.model,
            tp_size=tp_size,
            speculative=ev.speculative or server.speculative,
            draft_model=ev.draft_model or server.draft_model,
            port=ev.port if ev.port is not None else server.port,
            tp_from_args=ev.tp_size is not None or server.tp_from_args,
            dp_size=first(ev.dp_size, server.dp_size),
            pp_size=first(ev.pp_size, server.pp_size),
            ep_size=first(ev.ep_size, server.ep_size),
            nnodes=first(ev.nnodes, server.nnodes),
            load_format=first(ev.load_format, server.load_format),
            quantization=first(ev.quantization, server.quantization),
            version=first(ev.version, server.version),
            args_hash=first(ev.args_hash, server.args_hash),
        ),
    )
    if not s.timeline and s.phase is Phase.STARTING:
        since = clocks.event_time(s, ev.t, now)
        s = s.evolve(
            timeline=enter_phase((), Phase.STARTING, ev.at, ev.t, since), phase_since=since, phase_since_log=ev.at
        )
    return s


def stated_args(s: Readiness, ev: ServerArgs) -> Readiness:
    """A launch command or a script's print of the arguments: the sizes and names it states, where SGLang's own
    `server_args=` has not said them; no launch starts (its lines may be a paste above a window from mid-run)."""
    server = s.server
    if server.tp_from_args and ev.tp_size is not None and server.tp_size is not None:
        return s
    tp_size = ev.tp_size if ev.tp_size is not None else server.tp_size
    return s.evolve(
        server=replace(
            server,
            model=server.model or ev.model,
            tp_size=tp_size,
            tp_from_args=server.tp_from_args or ev.tp_size is not None,
            speculative=server.speculative or ev.speculative,
            dp_size=first(server.dp_size, ev.dp_size),
            pp_size=first(server.pp_size, ev.pp_size),
            ep_size=first(server.ep_size, ev.ep_size),
            nnodes=first(server.nnodes, ev.nnodes),
        ),
        tp_inferred="" if ev.tp_size is not None else s.tp_inferred,
    )


def first(a: _T | None, b: _T | None) -> _T | None:
    return a if a is not None else b


def on_milestone(s: Readiness, ev: Milestone, now: float) -> Readiness:
    rank = ev.rank or ("TP0" if ev.kind in SCHEDULER_KINDS else None)
    s = log_seen(s, ev.at, now, ev.rank, what=f"log: {ev.kind}", t=ev.t)
    if ev.kind in SHUTDOWN_KINDS:  # a signal asked it to stop: says why, when the process goes
        return s if s.shutdown is not None else s.evolve(shutdown=ev)
    if not_this_launchs(s, ev):
        return s
    if ev.kind in PER_RANK_KINDS and ev.rank is not None and tp_index(ev.rank) == 0:
        s = tp_one(s, ev)
    elif ev.kind in PER_RANK_KINDS and ev.rank is None and untagged_scheduler_line(ev):
        s = tp_one(s, ev, TP_UNTAGGED_REASON)
    s = shape_facts(s, ev)
    if rank:
        s = s.evolve(ranks=update_rank(s.ranks, rank, ev, clocks.event_time(s, ev.t, now)))
    if ev.kind == "graph_begin":  # the capture now, for every view (tui.core.capture)
        s = s.evolve(capture_now=capture_bar_of(str(ev.get("what") or "")))
    if ev.draft:
        if ev.kind in ("graph_begin", "graph_end"):  # a draft's capture comes after the target's KV pool and capture
            s = advance(s.evolve(launched=True), Phase.CUDA_GRAPH, ev.at, ev.t, now)
        span = DRAFT_SPANS.get(ev.kind)
        if span is not None:
            phase, begins = span
            opener = open_draft if begins else close_draft
            name = str(ev.get("what") or "")  # each draft capture its own span ("draft", "draft extend")
            s = s.evolve(timeline=opener(s.timeline, phase, ev.at, ev.t, clocks.event_time(s, ev.t, now), name=name))
        return s
    s = s.evolve(latest_milestone=ev, milestone_ranks=add_rank(s.milestone_ranks, ev.kind, rank))
    if ev.kind == "startup_timings":
        s = s.evolve(startup_timings=tuple((k, float(v)) for k, v in ev.fields if isinstance(v, (int, float))))
    target = milestone_phase(s, ev)
    if target is not None or ev.kind == "fired_up":
        s = s.evolve(launched=True)
    if ev.kind == "fired_up":
        if s.log_ready:  # another rank's fired up: the first one dates it
            return maybe_ready(s, ev.at, ev.t, now)
        ready_at = clocks.event_time(s, ev.t, now)
        s = s.evolve(log_ready=True, log_ready_at=ready_at, log_ready_stamp=(ev.at, ev.t))
        return maybe_ready(s, ev.at, ev.t, now)
    if target is None:
        return s
    if ev.kind == "health_access":  # ready where the rule allows (no warmup span of its own), else HTTP up
        up = maybe_ready(s.evolve(log_health=ev), ev.at, ev.t, now)
        return up if up.phase is not s.phase else advance(up, target, ev.at, ev.t, now)
    return advance(s, target, ev.at, ev.t, now)


def not_this_launchs(s: Readiness, ev: Milestone) -> bool:
    """An access or serving line while this launch's start is in view and it is not up yet: the log's own milestones
    say when its HTTP is up, so such a line is another server's writing to the same log (a launch appended to a
    running server's log). It is no milestone of this launch (the answerer reads the latest one)."""
    serving = ev.kind in SERVING_KINDS and s.phase not in (Phase.READY, Phase.SERVING)
    return (serving or ev.kind in ACCESS_KINDS) and launch_in_view(s)


def milestone_phase(s: Readiness, ev: Milestone) -> Phase | None:
    """The phase a main-model line shows, at least (forward only): serving lines by the readiness rule (this
    server's /health 200 where it is probed, else warmup: HTTP is up). Those and access lines reach here only with
    no launch in view (not_this_launchs)."""
    kind = ev.kind
    if kind in SERVING_KINDS:
        return Phase.SERVING if s.phase is Phase.READY or may_be_ready(s) else Phase.WARMUP
    if kind in ACCESS_KINDS:
        return Phase.WARMUP
    if kind == "hf_snapshot":  # SGLang's loader prints its own lines; huggingface_hub's may come from any process
        return None if ev.get("hub") else Phase.LOADING_WEIGHTS
    return MILESTONE_PHASE.get(kind)


def shape_facts(s: Readiness, ev: Milestone) -> Readiness:
    """The facts the 0.5.14 … 0.5.23 lines carry (DeepGEMM JIT, HTTP server, PD, EPLB, HF snapshot, weight cache)."""
    kind = ev.kind
    if kind == "dist_init":
        return comm_facts(s, ev)
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
        return s.evolve(weight_cache=weight_cache(s.weight_cache, ev))
    return s


def comm_facts(s: Readiness, ev: Milestone) -> Readiness:
    """What a distributed-init line says of the TP size: a communicator's size (NCCL INFO), a TP group that spans
    nodes (custom all-reduce off)."""
    n, spans = ev.get("nranks"), ev.get("spans_nodes")
    changes: Facts = {}
    if isinstance(n, int) and (s.tp_nranks is None or n > s.tp_nranks):
        changes["tp_nranks"] = n
    if spans is True and not s.tp_spans_nodes:
        changes["tp_spans_nodes"] = True
    return with_log_tp(s.evolve(**changes)) if changes else s


def weight_cache(old: WeightCacheInfo | None, ev: Milestone) -> WeightCacheInfo:
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


def on_failure(s: Readiness, ev: Failure, now: float) -> Readiness:
    s = log_seen(s, ev.at, now, ev.rank, what="log: failure", t=ev.t)
    if s.phase is not Phase.FAILED and not stopped_by_us(s, now):
        if s.shutdown is not None:  # a traceback of the shutdown a signal asked for: its noise, not a cause
            return stopped_from_outside(s, s.shutdown.line, s.shutdown.at, ev.t, now)
        if is_interrupt(ev):  # Ctrl-C (SIGINT) from someone: a stop from outside, not a crash
            return stopped_from_outside(s, ev.line, ev.at, ev.t, now)
    old = s.error
    if old is None or (ev.root_cause and not old.root_cause) or marker_outranks(old, ev):
        # the rank that failed: the cause line's own prefix, else that of the marker its traceback came under
        rank = ev.rank or (old.rank if old is not None else None)
        s = s.evolve(error=ErrorInfo(kind=ev.kind, line=ev.line, at=ev.at, root_cause=ev.root_cause, rank=rank))
    return fail(s, ev.at, ev.t, now)


def marker_outranks(old: ErrorInfo, ev: Failure) -> bool:
    """A scheduler's exception marker says more than a generic "other" one printed before it (`Received sigquit
    from a child process` is the parent reacting to the child's exception, which is the cause)."""
    return not old.root_cause and not ev.root_cause and old.kind == "other" and ev.kind != "other"


def is_interrupt(ev: Failure) -> bool:
    return ev.line.rstrip().endswith("KeyboardInterrupt")


def on_batch(s: Readiness, ev: BatchStats, now: float) -> Readiness:
    s = log_seen(s, ev.at, now, ev.rank, what=f"log: {ev.stage} batch", t=ev.t)
    if ev.stage != "decode":
        # A prefill is a request being served (the parser keeps health checks' 1-token prefills out): a log slice
        # of prefills only, or one after ready. Before fired up it is the warmup's own request.
        if ev.stage == "prefill" and (s.phase is Phase.READY or (may_serve(s, Phase.STARTING) and traffic(s, ev))):
            return advance(s, Phase.SERVING, ev.at, ev.t, now)
        return s.evolve(prefill_lines=s.prefill_lines + ev.count)
    decode = DecodeInfo(
        accept_len=ev.accept_len,
        accept_rate=ev.accept_rate,
        gen_throughput=ev.gen_throughput,
        running_req=ev.running_req,
        token_usage=ev.token_usage,
        at=ev.at,
    )
    history = (s.decode_history + ((clocks.event_time(s, ev.t, now), ev.gen_throughput, ev.accept_len),))[
        -DECODE_HISTORY:
    ]
    s = s.evolve(decode=decode, decode_history=history)
    if ev.accept_len is not None and not s.server.speculative:
        s = s.evolve(server=replace(s.server, speculative="unknown"))
    if ev.running_req is not None and ev.running_req <= 0:
        return s
    # Decoding requests: the server serves (a log attached mid-run shows nothing else).
    if s.phase is Phase.READY or (may_serve(s, Phase.STARTING, Phase.WARMUP) and may_be_ready(s)):
        return advance(s, Phase.SERVING, ev.at, ev.t, now)
    return s


def may_serve(s: Readiness, *phases: Phase) -> bool:
    """Whether batch lines may show the server serving: in one of `phases`, or with none of this launch's startup
    in view (a window's phase, e.g. init read from a rank's line, is no startup that batch lines contradict)."""
    return s.phase in phases or not launch_in_view(s)


def traffic(s: Readiness, ev: BatchStats) -> bool:
    """Prefills with no startup in view are requests being served, unless they may be the warmup's one request:
    more than one prefill line, or one that shows other requests (running, queued, tokens in use)."""
    busy = (ev.running_req or 0) > 0 or (ev.queue_req or 0) > 0 or (ev.token_usage or 0.0) > 0.0
    return busy or s.prefill_lines + ev.count >= 2


def on_hint(s: Readiness, ev: SpeculativeHint, now: float) -> Readiness:
    s = log_seen(s, ev.at, now, what="log: speculative hint", t=ev.t)
    current = s.server.speculative
    if current and current != "unknown":
        return s
    return s.evolve(server=replace(s.server, speculative=ev.algorithm or "unknown"))


def on_jit_hint(s: Readiness, ev: JitHint, now: float) -> Readiness:
    return s.evolve(jit_named=ev.kind)


def on_watchdog_dump(s: Readiness, ev: WatchdogDump, now: float) -> Readiness:
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
