"""Reason and evidence: one line saying why the model says what it says, and the facts it rests on."""

from __future__ import annotations

from tui.core import fmt
from tui.core.answerer import FOREIGN, LOADING_PHASES, OURS, answerer, identity, port_words, printable
from tui.core.events import HealthResult
from tui.core.stall import describe
from tui.core.state import BarState, ErrorInfo, Phase, Readiness

# The failure lines the reducer writes itself when the processes, not the log, say how the launch ended.
PROCESS_EXITED = "server process exited (no process of the server is left)"
STOPPED_BY_TOOL = "stopped by sglang-tui"
STOPPED_FROM_OUTSIDE = "stopped (by a signal from outside sglang-tui)"
# Why /health gives no answer after the log said fired up (SGLang's /health runs a real 1-token generation).
NO_ANSWER_WHY = {
    "timeout": "SGLang's /health runs a real 1-token generation, so a stuck scheduler hangs it",
    "refused": "nothing accepts connections there: the server may have exited, or listens on another port",
}


def stopped_line(action: str) -> str:
    """The failure line of a launch that sglang-tui itself stopped, e.g. "stopped by sglang-tui (kill)"."""
    return f"{STOPPED_BY_TOOL} ({action})"


def from_processes(error: ErrorInfo) -> bool:
    """Whether the failure line is the reducer's own (the processes said it), not one of the log's."""
    return error.at is None and (error.line == PROCESS_EXITED or error.stopped_by == "sglang-tui")

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
    return reason, _evidence(s, now)


def latest_health(s: Readiness, endpoint: str) -> HealthResult | None:
    """The latest probe result for one endpoint, if any."""
    return next((r for r in s.health if r.endpoint == endpoint), None)


def health_text(r: HealthResult) -> str:
    """"503 starting", "200 ok", "refused" …"""
    return f"{r.status} {r.outcome}" if r.status is not None else r.outcome


# -------------------------------------------------------------------------------------------------- reason


def _reason(s: Readiness, now: float) -> str:
    phase = s.phase
    if s.health_ready and phase in (Phase.STARTING, Phase.WARMUP):
        who, why = answerer(s)
        if who == FOREIGN:
            return f"something else answers on {port_words(s)}: {why}"
        if who != OURS:
            return f"/health answers 200 on {port_words(s)}; checking what answers ({why})"
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
        return _loading_reason(s)
    if phase is Phase.KV_CACHE:
        return f"allocating KV cache: {_ranks(s, 'kv_alloc')} allocated"
    if phase is Phase.CUDA_GRAPH:
        return _capture_reason(s)
    if phase is Phase.WARMUP:
        return _warmup_reason(s, now)
    if phase is Phase.READY:
        return _ready_reason(s) + _gone_suffix(s)
    if phase is Phase.SERVING:
        return _serving_reason(s) + _gone_suffix(s)
    return _failed_reason(s)


def _loading_reason(s: Readiness) -> str:
    bar = s.shards
    if bar is None:
        began = _ranks(s, "load_begin")
        return f"loading weights: {began} began, no shard bar yet (an HF download prints nothing)"
    text = f"loading weights: {bar.done}/{bar.total} shards{_pace(bar, 'shards')}"
    if s.draft_shards is not None:
        text += f"; draft {s.draft_shards.done}/{s.draft_shards.total}"
    ended = _count(s, "load_end")
    if ended:
        text += f"; {_ranks(s, 'load_end')} finished"
    return text


def _capture_reason(s: Readiness) -> str:
    bar = s.capture
    if bar is None:
        return f"capturing CUDA graphs: {_ranks(s, 'graph_begin')} began"
    bs = f" (bs={bar.bs})" if bar.bs is not None else ""
    return f"capturing CUDA graphs: {bar.done}/{bar.total} batches{bs}{_pace(bar, 'batches')}"


def _warmup_reason(s: Readiness, now: float) -> str:
    health = latest_health(s, "/health")
    last = f"/health {health_text(health)}" if health else "no /health answer yet"
    if s.log_ready:
        silent = _not_answering_for(s, health, now)
        if silent is not None and health is not None:
            why = NO_ANSWER_WHY.get(health.outcome, "its answer is not HTTP")
            return f"up but not answering /health for {fmt.duration(silent)} (last: {last} on {port_words(s)}): {why}"
        return f"log says fired up; waiting for /health 200 (last: {last})"
    if s.latest_milestone is None:
        return f"uvicorn answers (/v1/models is not a readiness signal); warmup running, {last}"
    return f"uvicorn up, warmup request running; {last}"


def _not_answering_for(s: Readiness, health: HealthResult | None, now: float) -> float | None:
    """Seconds since fired up, when a /health probe after that line got no HTTP answer (refused, hung)."""
    if health is None or health.outcome in ("ok", "starting", "http_error") or s.log_ready_at is None:
        return None
    checked = dict(s.health_checked_at).get("/health")
    if checked is None or checked < s.log_ready_at:
        return None
    return max(0.0, now - s.log_ready_at)


def _ready_reason(s: Readiness) -> str:
    if s.log_ready and s.health_ready:
        return "ready: the log says fired up and /health answers 200"
    if s.log_ready:
        if s.health_probed is False:
            return "ready: the log says fired up (log only: /health is not probed, --no-health)"
        return "ready: the log says fired up (log only: no health probe)"
    ident = identity(s)
    if ident is not None and ident.outcome == "ok" and ident.model_path:
        names = f"{ident.endpoint} names {printable(ident.model_path)}"
        return f"ready: /health answers 200 and {names} (the log has not said fired up)"
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
    if error.stopped_by == "outside":
        gone = "" if s.process_alive is not False else "; no process of the server is left"
        return f"{STOPPED_FROM_OUTSIDE}: {error.line.strip()}{gone}"
    if from_processes(error) and error.line != PROCESS_EXITED:
        return f"{error.line}: no process of the server is left"
    if from_processes(error):
        if s.process_alive:
            return "failed: the server process exited; a new one runs, waiting for its launch in the log"
        return f"failed: {PROCESS_EXITED}, with no failure line in the log (a dead process, not a stall)"
    return f"failed ({error.kind}): {error.line.strip()}"


def _gone_suffix(s: Readiness) -> str:
    return "; the server process is gone" if s.process_alive is False else ""


def _pace(bar: BarState, unit: str) -> str:
    if bar.done >= bar.total > 0:
        return ""
    if bar.rate_per_s is None:
        return ""
    return f", {fmt.rate(bar.rate_per_s, unit)}, {fmt.eta(bar.eta_s)}"


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
    if s.health_ready and s.phase in LOADING_PHASES:
        items.append(f"health: /health 200 while the log shows {s.phase.value}: another server on this port?")
    elif s.health_ready and s.phase in (Phase.STARTING, Phase.WARMUP):
        who, why = answerer(s)
        if who == FOREIGN:
            items.append(f"health: /health 200 from something else on {port_words(s)}: {why}")
    owner = s.port_owner
    if owner is not None and owner.pid is not None:
        words = {True: ": one of the server's processes", False: ": not one of the server's processes"}
        whose = words.get(owner.ours, "") if owner.ours is not None else ""
        command = f" ({printable(owner.command)})" if owner.command else ""
        items.append(f"port: {owner.port} is held by PID {owner.pid}{command}{whose}")
    if s.shutdown is not None and s.phase is not Phase.FAILED:
        items.append(_join("log: shutting down:", s.shutdown.line.strip(), fmt.clock_of(s.shutdown.at)))
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
