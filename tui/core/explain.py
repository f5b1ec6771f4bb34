"""Reason and evidence: one line saying why the model says what it says, and the facts it rests on."""

from __future__ import annotations

from tui.core import eta, fmt
from tui.core.events import HealthResult
from tui.core.stall import describe, limit_for
from tui.core.state import BarState, ErrorInfo, Phase, Readiness

# The failure lines the reducer writes itself when the processes, not the log, say how the launch ended.
PROCESS_EXITED = "server process exited (no process of the server is left)"
STOPPED_BY_TOOL = "stopped by sglang-tui"


def stopped_line(action: str) -> str:
    """The failure line of a launch that sglang-tui itself stopped, e.g. "stopped by sglang-tui (kill)"."""
    return f"{STOPPED_BY_TOOL} ({action})"


def from_processes(error: ErrorInfo) -> bool:
    """Whether the failure line is the reducer's own (the processes said it), not one of the log's."""
    return error.at is None and (error.line == PROCESS_EXITED or error.line.startswith(STOPPED_BY_TOOL + " ("))

MILESTONE_LABELS = {
    "init_begin": "Init begin",
    "init_end": "Init end",
    "mem_baseline": "Memory baseline taken",
    "load_begin": "Load weight begin",
    "load_end": "Load weight end",
    "kv_alloc": "KV Cache is allocated",
    "mem_pool_end": "Memory pool end",
    "graph_begin": "Capture CUDA graph begin",
    "graph_end": "Capture CUDA graph end",
    "max_tokens": "max_total_num_tokens",
    "startup_timings": "Engine startup timings",
    "uvicorn_started": "uvicorn started",
    "app_startup_complete": "Application startup complete",
    "uvicorn_running": "Uvicorn running",
    "warmup_request": "warmup request",
    "fired_up": "fired up",
    "unbalanced_memory": "memory capacity unbalanced",
    "load_straggler": "other ranks did not finish loading",
}


def explain(s: Readiness, now: float) -> tuple[str, tuple[str, ...]]:
    """(reason, evidence) for the state at clock time `now`."""
    reason = _reason(s, now)
    if s.stall is not None:
        reason = f"stalled in {s.phase.value}: {describe(s.stall, s.phase.value, now)}"
    elif s.past is not None:
        reason += _history_suffix(s, now)
    return reason, _evidence(s, now)


def _history_suffix(s: Readiness, now: float) -> str:
    """" · capture 2.1× slower than usual" while a phase runs late; "; capture was 2.1× slower …" once ready."""
    if s.phase in (Phase.READY, Phase.SERVING):
        slow = eta.slow_phases(s)
        return "; " + ", ".join(eta.slow_words(p, f, past=True) for p, f in slow) if slow else ""
    found = eta.estimate(s, now).slow
    return f" · {eta.slow_words(*found)}" if found is not None else ""


def latest_health(s: Readiness, endpoint: str) -> HealthResult | None:
    """The latest probe result for one endpoint, if any."""
    return next((r for r in s.health if r.endpoint == endpoint), None)


def health_text(r: HealthResult) -> str:
    """"503 starting", "200 ok", "refused" …"""
    return f"{r.status} {r.outcome}" if r.status is not None else r.outcome


# -------------------------------------------------------------------------------------------------- reason


def _reason(s: Readiness, now: float) -> str:
    phase = s.phase
    if phase is Phase.STARTING:
        if s.launched:
            model = f" {s.server.model}" if s.server.model else ""
            return f"launched{model}; waiting for the ranks to start"
        if s.decode is not None:
            return "decode lines with no running request: idle server"
        return "waiting for the first log line"
    if phase is Phase.INIT:
        return f"initialising distributed: {_ranks(s, 'init_begin')} began, {_ranks(s, 'init_end')} done"
    if phase is Phase.LOADING_WEIGHTS:
        return _loading_reason(s, now)
    if phase is Phase.KV_CACHE:
        return f"allocating KV cache: {_ranks(s, 'kv_alloc')} allocated"
    if phase is Phase.CUDA_GRAPH:
        return _capture_reason(s, now)
    if phase is Phase.WARMUP:
        return _warmup_reason(s)
    if phase is Phase.READY:
        return _ready_reason(s) + _gone_suffix(s)
    if phase is Phase.SERVING:
        return _serving_reason(s) + _gone_suffix(s)
    return _failed_reason(s)


def _loading_reason(s: Readiness, now: float) -> str:
    bar = s.shards
    if bar is None:
        began = _ranks(s, "load_begin")
        return f"loading weights: {began} began, no shard bar yet (an HF download prints nothing)"
    text = f"loading weights: {bar.done}/{bar.total} shards{_pace(bar, 'shards', now, s)}"
    if s.draft_shards is not None:
        text += f"; draft {s.draft_shards.done}/{s.draft_shards.total}"
    ended = _count(s, "load_end")
    if ended:
        text += f"; {_ranks(s, 'load_end')} finished"
    return text


def _capture_reason(s: Readiness, now: float) -> str:
    bar = s.capture
    if bar is None:
        return f"capturing CUDA graphs: {_ranks(s, 'graph_begin')} began"
    bs = f" (bs={bar.bs})" if bar.bs is not None else ""
    return f"capturing CUDA graphs: {bar.done}/{bar.total} batches{bs}{_pace(bar, 'batches', now, s)}"


def _warmup_reason(s: Readiness) -> str:
    health = latest_health(s, "/health")
    last = f"/health {health_text(health)}" if health else "no /health answer yet"
    if s.log_ready:
        return f"log says fired up; waiting for /health 200 (last: {last})"
    if s.latest_milestone is None:
        return f"uvicorn answers (/v1/models is not a readiness signal); warmup running, {last}"
    return f"uvicorn up, warmup request running; {last}"


def _ready_reason(s: Readiness) -> str:
    if s.log_ready and s.health_ready:
        return "ready: the log says fired up and /health answers 200"
    if s.log_ready:
        if s.health:
            return "ready: the log says fired up; /health gives no HTTP answer to confirm it"
        return "ready: the log says fired up (no health probe)"
    return "ready: /health answers 200 (the log has not said fired up)"


def _serving_reason(s: Readiness) -> str:
    d = s.decode
    if d is None:
        return "serving"
    parts = []
    if d.running_req is not None:
        parts.append(f"{d.running_req} running")
    if d.gen_throughput is not None:
        parts.append(f"{d.gen_throughput:.1f} tok/s")
    if d.accept_len is not None:
        parts.append(f"accept len {d.accept_len:.2f}")
    return "serving: " + ", ".join(parts) if parts else "serving"


def _failed_reason(s: Readiness) -> str:
    error = s.error
    if error is None:
        return "failed"
    if from_processes(error) and error.line != PROCESS_EXITED:
        return f"{error.line}: no process of the server is left"
    if from_processes(error):
        if s.process_alive:
            return "failed: the server process exited; a new one runs, waiting for its launch in the log"
        return f"failed: {PROCESS_EXITED}, with no failure line in the log (a dead process, not a stall)"
    return f"failed ({error.kind}): {error.line.strip()}"


def _gone_suffix(s: Readiness) -> str:
    return "; the server process is gone" if s.process_alive is False else ""


def _pace(bar: BarState, unit: str, now: float, s: Readiness) -> str:
    """", 7.1 shards/s, ETA 12 s" (decaying with the silence), or, once nothing moved for WITHDRAW_AFTER x the
    mean step interval, " · no progress for 45 s · stalled at 3m00s": never a frozen small number."""
    if bar.done >= bar.total > 0:
        return ""
    if bar.rate_per_s is None:
        return ""
    left, silent = eta.bar_left(bar, now)
    if silent is not None:
        return " · " + eta.withdrawn_words(eta.Eta(silent_s=silent, stalled_at_s=limit_for(s)))
    return f", {fmt.rate(bar.rate_per_s, unit)}, {fmt.eta(left)}"


def _count(s: Readiness, kind: str) -> int:
    for k, names in s.milestone_ranks:
        if k == kind:
            return max(1, len(names))
    return 0


def _ranks(s: Readiness, kind: str) -> str:
    n = _count(s, kind)
    total = s.server.tp_size or (len(s.ranks) if s.ranks else None)
    if total:
        total = max(total, n)  # args that disagree with the ranks seen must not print "3/2"
    return f"{n}/{total} ranks" if total else f"{n} ranks"


# ------------------------------------------------------------------------------------------------ evidence


def _evidence(s: Readiness, now: float) -> tuple[str, ...]:
    items: list[str] = []
    m = s.latest_milestone
    if m is not None:
        label = MILESTONE_LABELS.get(m.kind, m.kind)
        where = f" on {_ranks(s, m.kind)}" if m.rank or _count(s, m.kind) > 1 else ""
        items.append(_join("log:", f"{label}{where}", fmt.clock_of(m.at)))
    if s.shards is not None:
        items.append(f"log: shards {s.shards.done}/{s.shards.total}")
    if s.draft_shards is not None:
        items.append(f"log: draft shards {s.draft_shards.done}/{s.draft_shards.total}")
    if s.capture is not None and s.phase is Phase.CUDA_GRAPH:
        items.append(f"log: capture {s.capture.done}/{s.capture.total}")
    if s.log_ready and (m is None or m.kind != "fired_up"):
        items.append("log: fired up")
    if s.decode is not None:
        items.append(_join("log: decode", _serving_reason(s).removeprefix("serving: "), fmt.clock_of(s.decode.at)))
    if s.error is not None and not from_processes(s.error):
        items.append(_join("log:", s.error.line.strip(), ""))
    for r in s.health:
        checked = dict(s.health_checked_at).get(r.endpoint)
        ago = fmt.ago(now - checked) if checked is not None else ""
        note = " (not a readiness signal)" if r.endpoint != "/health" and r.outcome == "ok" else ""
        items.append(_join(f"health: {r.endpoint}", health_text(r) + note, ago))
    if s.health_ready and s.phase in (Phase.INIT, Phase.LOADING_WEIGHTS, Phase.KV_CACHE, Phase.CUDA_GRAPH):
        items.append(f"health: /health 200 while the log shows {s.phase.value}: another server on this port?")
    if s.process_alive is not None:
        alive = f"alive ({len(s.process_pids)} pids)" if s.process_alive else "gone"
        items.append(f"process: {alive}")
    if s.connection_since is not None and s.connection != "connected":
        items.append(_join(f"link: {s.connection}", s.connection_detail, ""))
    if s.stall is not None:
        items.append(f"stall: silent for {fmt.duration(now - s.stall.since)}, limit {fmt.duration(s.stall.limit_s)}")
    return tuple(items)


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)
