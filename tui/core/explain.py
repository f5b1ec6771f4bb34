"""The words of a startup under way (each phase: what it does, how far, what holds it) and the evidence (the
facts the verdict rests on). The verdict's own line, ready, failed, stalled or starting, is said by
tui/core/wording.py, which uses these words for a startup under way; the lines the reducer writes itself when
the processes, not the log, end a launch are here too."""

from __future__ import annotations

from tui.core import activity as host_activity
from tui.core import eta, fmt, stacks
from tui.core.answerer import FOREIGN, LOADING_PHASES, OURS, answerer, behind, port_words, printable
from tui.core.capture import current_capture
from tui.core.events import HealthResult, LogFile
from tui.core.names import phase_words
from tui.core.ranklabels import ranks_span, tp_floor
from tui.core.stall import limit_for
from tui.core.state import BarState, DecodeInfo, ErrorInfo, MidRun, Phase, Readiness

# The failure lines the reducer writes itself when the processes, not the log, say how the launch ended.
PROCESS_EXITED = "server process exited (no process of the server is left)"
STOPPED_BY_TOOL = "stopped by sglang-tui"
STOPPED_FROM_OUTSIDE = "stopped (by a signal from outside sglang-tui)"
# Why /health gives no answer after the log said fired up (SGLang's /health runs a real 1-token generation).
NO_ANSWER_WHY = {
    "timeout": "SGLang's /health runs a real 1-token generation, so a stuck scheduler hangs it",
    "refused": "nothing accepts connections there: the server may have exited, or listens on another port",
}


RANK_EXITED = "exited while the rest of the server runs"


def rank_exited_line(lost: tuple[tuple[int, str], ...]) -> str:
    """The failure line for SGLang processes that died while the rest of the server runs (a rank killed)."""
    names = ", ".join(f"{title} (pid {pid})" for pid, title in lost)
    return f"{names} {RANK_EXITED}: it cannot serve without {'it' if len(lost) == 1 else 'them'}"


MAIN_EXITED = "the server's main process"  # … (pid M) exited; its SGLang processes outlive it


def main_exited_line(main: int, left: tuple[tuple[int, str], ...]) -> str:
    """The failure line for a server whose main process (the launcher: HTTP, the tokenizer) is gone while only its
    SGLang-titled processes live. With SGLANG_EARLY_FORKSERVER=1 they are a forkserver's children, which exit by
    themselves about a second later: no rank crashed."""
    names = ", ".join(sorted({title for _, title in left}))
    return (
        f"{MAIN_EXITED} (pid {main}) exited; {len(left)} of its SGLang processes ({names}) outlived it "
        "(a forkserver's exit by themselves within seconds; any other are orphans)"
    )


def stopped_line(action: str) -> str:
    """The failure line of a launch that sglang-tui itself stopped, e.g. "stopped by sglang-tui (kill)"."""
    return f"{STOPPED_BY_TOOL} ({action})"


def from_processes(error: ErrorInfo) -> bool:
    """Whether the failure line is the reducer's own (the processes said it), not one of the log's."""
    return error.at is None and (
        error.line == PROCESS_EXITED
        or error.stopped_by == "sglang-tui"
        or RANK_EXITED in error.line
        or error.line.startswith(MAIN_EXITED)
    )


# Log-path states that leave nothing to read: the verdict names them (a missing log is not "no line yet").
LOG_FILE_UNREADABLE = ("missing", "empty", "directory", "permission_denied")
# …and those the reason names while the startup runs (the log followed elsewhere, too).
LOG_FILE_NAMED = (*LOG_FILE_UNREADABLE, "rotated_following", "deleted_following")


def cannot_see_line(owner_uid: int | None) -> str:
    """The one line for processes that another uid owns (their /proc/PID/fd cannot be read)."""
    who = f"owned by uid {owner_uid}" if owner_uid is not None else "owned by another user"
    return f"cannot see the server's processes ({who}; watch as that user or root)"


def log_file_line(lf: LogFile) -> str:
    """What the log path is, in words ("" for a plain readable file)."""
    if lf.status == "missing":
        return f"log file missing: {lf.path}"
    if lf.status == "empty":
        return f"log file empty: {lf.path}"
    if lf.status == "directory":
        return f"log path is a directory, not a file: {lf.path}"
    if lf.status == "permission_denied":
        return f"permission denied: {lf.path}"
    if lf.status == "rotated_following":
        return f"log rotated: the server still writes to {lf.target}; following it"
    if lf.status == "deleted_following":
        pid = f" (pid {lf.pid})" if lf.pid is not None else ""
        return f"log deleted; following the server's stdout{pid}"
    return ""


def nothing_listens(s: Readiness) -> bool:
    """Nothing accepts connections on the port: /health is refused (or, unprobed, the watch sees no listener)."""
    health = latest_health(s, "/health")
    if health is not None:
        return health.outcome == "refused"
    owner = s.port_owner
    return s.health_probed is False and owner is not None and owner.pid is None and s.process_visible


def nothing_found(s: Readiness) -> str:
    """What is missing while nothing of the server is found ("" once anything of it is: a log line, a launch, a
    live process, a listener): "nothing listens on port 1 and no log was given", "log file missing: PATH"."""
    if s.phase is not Phase.STARTING or s.launched or s.decode is not None:
        return ""
    lf = s.log_file
    if lf is not None and lf.status == "missing":
        # the missing log is the verdict whatever answers on the port: a typo in --log must not wait forever on
        # a server it cannot see the log of (its line names the log first, and what answers after)
        if nothing_listens(s):
            return f"{log_file_line(lf)}; nothing listens on {port_words(s)}"
        answers = s.health_ready or s.process_alive or any(r.endpoint == "/health" for r in s.health)
        return log_file_line(lf) + (f" (a server answers on {port_words(s)}: is the path right?)" if answers else "")
    if s.process_alive or s.health_ready:
        return ""
    if s.log_watched is False and nothing_listens(s):
        return f"nothing listens on {port_words(s)} and no log was given"
    return ""


def nothing_found_headline(s: Readiness) -> str:
    """The header's word for it instead of STARTING: LOG MISSING, NOTHING LISTENS ("" when something is found)."""
    if not nothing_found(s):
        return ""
    return "LOG MISSING" if s.log_file is not None and s.log_file.status == "missing" else "NOTHING LISTENS"


def symlink_line(lf: LogFile) -> str:
    return f"log path {lf.path} is a symlink to {lf.symlink}" if lf.symlink else ""


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
    "dist_init": "distributed init line",
    "kv_profile": "KV cache sizing",
    "jit_begin": "DeepGEMM JIT session",
    "jit_kernel": "DeepGEMM JIT compile",
    "jit_end": "DeepGEMM JIT end",
    "load_step": "weight loading line",
    "kernel_autotune": "FlashInfer autotune",
    "graph_step": "CUDA graph capture line",
    "compile_autotune": "torch.compile AUTOTUNE",
    "eplb_begin": "EPLB rebalance",
    "eplb_end": "EPLB rebalance end",
    "retract": "KV pool full, retracting requests",
    "http_access": "HTTP access line",
    "health_access": "/health 200 access line",
    "request_log": "request log line",
}
# What the line a window of the log starts at is (MidRun.kind: a milestone kind, a bar, a batch or a rank's line).
MID_RUN_WORDS = {
    "rank": "line",
    "batch": "batch line",
    "weights": "weight shard bar",
    "draft_weights": "draft weight bar",
    "capture": "capture bar",
    "piecewise": "piecewise capture bar",
    "jit": "DeepGEMM warmup",
    "warmup": "warmup bar",
}
# Lines SGLang prints at warning level or past its logger: under --log-level warning a whole log starts with them too
# (server_args= is an INFO line), so they may not be a window's start.
ABOVE_INFO_KINDS = frozenset({"weights", "draft_weights", "capture", "piecewise", "jit", "warmup", "dist_init",
                              "jit_begin", "compile_autotune"})  # fmt: skip


def progress_words(s: Readiness, now: float) -> str:
    """The words of a startup under way (starting to warmup, not stalled) at clock time `now`: what the phase
    does and how far, what the host shows beyond the log, the history's pace, then `tail_words`. The verdict line
    (tui/core/wording.py) is these words for a verdict of kind "starting"."""
    reason = _reason(s, now)
    beyond = _beyond_log(s, now)
    if beyond:
        reason = f"{reason}; {beyond}"
    if s.past is not None:
        reason += history_suffix(s, now)
    return reason + tail_words(s)


def tail_words(s: Readiness) -> str:
    """What follows any words of a startup under way, stalled or not: a log that leaves nothing to read, a window
    of the log that starts mid-run, processes that cannot be seen (why it cannot tell whether the server runs)."""
    text = _log_file_suffix(s)
    if s.mid_run is not None and s.phase is s.mid_run.phase and s.phase not in (Phase.READY, Phase.SERVING):
        text += f"; {mid_run_words(s.mid_run)}"
    if s.phase not in (Phase.READY, Phase.SERVING, Phase.FAILED) and not s.process_visible:
        text += unseen_suffix(s)
    return text


def _beyond_log(s: Readiness, now: float) -> str:
    """What the host shows beyond the log, while it is fresh: compiling, downloading, ranks working; and, in
    init, which ranks wait at the NCCL rendezvous for which (issue 13)."""
    parts = []
    a = host_activity.fresh(s.activity, now)
    if a is not None:
        if a.compilers:
            parts.append(host_activity.compiling_text(a))
        if a.download_bytes is not None and not (s.phase is Phase.LOADING_WEIGHTS and s.shards is None):
            parts.append("HF " + host_activity.downloading_text(a))
        if a.busy and not a.compilers:
            parts.append(host_activity.busy_text(a))
    if s.phase is Phase.INIT:
        waiting = rendezvous(s)
        if waiting:
            parts.append(waiting)
    return "; ".join(parts)


def mid_run_words(m: MidRun) -> str:
    """ "attached mid-run: the log starts at TP0's DeepGEMM JIT compile" (no launch line before that line)."""
    what = MID_RUN_WORDS.get(m.kind) or MILESTONE_LABELS.get(m.kind, m.kind)
    who = f"{m.rank}'s " if m.rank else "the "
    hedge = " (or --log-level warning left out its launch)" if m.kind in ABOVE_INFO_KINDS else ""
    return f"attached mid-run: the log starts at {who}{what}{hedge}"


def rendezvous(s: Readiness) -> str:
    """ "NCCL rendezvous: TP0–2, TP4–7 wait at init; TP3 has not reached it" (init only, TP size known)."""
    total = s.server.tp_size
    if s.phase is not Phase.INIT or not total or total < 2:
        return ""
    began = set(_names(s, "init_begin"))
    if not began:
        return ""
    ended = set(_names(s, "init_end"))
    expected = {f"TP{i}" for i in range(total)}
    missing = sorted(expected - began - ended, key=lambda n: int(n[2:]))
    waiting = sorted((began - ended) & expected, key=lambda n: int(n[2:]))
    if not missing or not waiting:
        return ""
    verb = "has" if len(missing) == 1 else "have"
    return f"NCCL rendezvous: {ranks_span(waiting)} wait at init; {ranks_span(missing)} {verb} not reached it"


def _names(s: Readiness, kind: str) -> tuple[str, ...]:
    for k, names in s.milestone_ranks:
        if k == kind:
            return names
    return ()


def history_suffix(s: Readiness, now: float) -> str:
    """ " · capture 2.1× slower than usual" while a phase runs late; "; capture was 2.1× slower …" once ready."""
    if s.phase in (Phase.READY, Phase.SERVING):
        slow = eta.slow_phases(s)
        return "; " + ", ".join(eta.slow_words(p, f, past=True) for p, f in slow) if slow else ""
    found = eta.estimate(s, now).slow
    return f" · {eta.slow_words(*found)}" if found is not None else ""


def latest_health(s: Readiness, endpoint: str) -> HealthResult | None:
    """The latest probe result for one endpoint, if any."""
    return next((r for r in s.health if r.endpoint == endpoint), None)


def health_text(r: HealthResult) -> str:
    """ "503 starting", "200 ok", "refused" …"""
    return f"{r.status} {r.outcome}" if r.status is not None else r.outcome


# -------------------------------------------------------------------------------------------------- reason


def _reason(s: Readiness, now: float) -> str:
    text = _phase_reason(s, now)
    if s.health_ready and s.phase in LOADING_PHASES:  # a 200 while this launch loads: another server's, mostly
        who, why = answerer(s)
        if who == FOREIGN:
            text += f"; something else answers on {port_words(s)}: {why}"
    return text


def _phase_reason(s: Readiness, now: float) -> str:
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
        return nothing_found(s) or "waiting for the first log line"
    if phase is Phase.INIT:
        if not _count(s, "init_begin") and not _count(s, "init_end"):
            seen = ranks_span(tuple(f"TP{i}" for i in s.tp_ranks_seen)) or "ranks"
            return f"ranks up ({seen} log lines), no startup milestone in view yet"
        return f"initialising distributed: {_ranks(s, 'init_begin')} began, {_ranks(s, 'init_end')} done"
    if phase is Phase.LOADING_WEIGHTS:
        return _loading_reason(s, now)
    if s.jit_active and phase in (Phase.KV_CACHE, Phase.CUDA_GRAPH, Phase.WARMUP):
        return _jit_reason(s)
    if phase is Phase.KV_CACHE:
        return _kv_reason(s)
    if phase is Phase.CUDA_GRAPH:
        return _capture_reason(s, now)
    if phase is Phase.WARMUP:
        return _warmup_reason(s, now)
    return phase_words(phase)  # ready, serving and failed are worded as verdicts (tui/core/wording.py)


def _loading_reason(s: Readiness, now: float) -> str:
    bar = s.shards
    if bar is None:
        began = _ranks(s, "load_begin")
        if host_activity.downloading(s.activity, s.updated_at) and s.activity is not None:
            return f"loading weights: {host_activity.downloading_text(s.activity)}; {began} began"
        return f"loading weights: {began} began, no shard bar yet (an HF download prints nothing)"
    text = f"loading weights: {bar.done}/{bar.total} shards{_pace(bar, 'shards', now, s)}"
    if s.draft_shards is not None:
        text += f"; draft {s.draft_shards.done}/{s.draft_shards.total}"
    ended = _count(s, "load_end")
    if ended:
        text += f"; {_ranks(s, 'load_end')} finished"
    return text


def _kv_reason(s: Readiness) -> str:
    m = s.latest_milestone
    if not _count(s, "kv_alloc") and m is not None:
        if m.kind in ("max_tokens", "startup_timings"):
            return "schedulers ready (KV pool sized, graphs done); waiting for the HTTP server to start"
        if m.kind == "kernel_autotune":
            return "running FlashInfer autotune (after the KV pool, before CUDA graph capture)"
    return f"allocating KV cache: {_ranks(s, 'kv_alloc')} allocated"


def _jit_reason(s: Readiness) -> str:
    """DeepGEMM JIT: kernel shapes compiled so far and the current shape's warmup bar."""
    text = f"compiling DeepGEMM kernels (JIT): {s.jit_kernels} shape{'s' if s.jit_kernels != 1 else ''}"
    if s.jit is not None:
        text += f", warmup {s.jit.done}/{s.jit.total}"
    return text + " (a first run compiles for 10-20 min)"


def _capture_reason(s: Readiness, now: float) -> str:
    which, bar = current_capture(s)  # the count the shards pane shows too
    if which == "piecewise":
        if bar is None:
            return f"capturing piecewise CUDA graph: {_ranks(s, 'graph_begin')} began"
        step = "compiling" if bar.label.startswith("Compiling") else "capturing"
        return f"{step} piecewise CUDA graph: {bar.done}/{bar.total} token sizes{_pace(bar, 'sizes', now, s)}"
    m = s.latest_milestone
    if bar is None and not _count(s, "graph_begin") and m is not None and m.kind == "compile_autotune":
        return "capturing CUDA graphs: torch.compile is autotuning kernels (Inductor AUTOTUNE)"
    if bar is None and not _count(s, "graph_begin") and m is not None and m.kind == "graph_step":
        return "capturing CUDA graphs (its begin is not in view)"
    if bar is None:
        return f"capturing CUDA graphs: {_ranks(s, 'graph_begin')} began"
    bs = f" (bs={bar.bs})" if bar.bs is not None else ""
    return f"capturing CUDA graphs: {bar.done}/{bar.total} batches{bs}{_pace(bar, 'batches', now, s)}"


def _warmup_reason(s: Readiness, now: float) -> str:
    health = latest_health(s, "/health")
    last = f"/health {health_text(health)}" if health else "no /health answer yet"
    if s.pd_warmup == "failed":
        return f"PD disaggregation warmup failed: the server marks itself unhealthy; {last}"
    if s.pd_warmup == "running":
        return f"PD disaggregation warmup running; {last}"
    shown = _window_up(s)
    if shown:
        return f"the log shows {shown}; waiting for /health 200 (last: {last})"
    if s.log_ready:
        silent = _not_answering_for(s, health, now)
        if silent is not None and health is not None:
            why = NO_ANSWER_WHY.get(health.outcome, "its answer is not HTTP")
            return f"up but not answering /health for {fmt.duration(silent)} (last: {last} on {port_words(s)}): {why}"
        if s.health_probed is False:
            return "log says fired up; not confirmed: /health is not probed (--no-health) and no server process is seen alive"
        return f"log says fired up; waiting for /health 200 (last: {last})"
    if s.latest_milestone is None:
        return f"uvicorn answers (/v1/models is not a readiness signal); warmup running, {last}"
    return f"uvicorn up, warmup request running; {last}"


def _window_up(s: Readiness) -> str:
    """What a window of the log (no launch in view) shows of a server that is up, in words ("" when nothing)."""
    if s.log_ready:
        return ""  # the log's own "fired up" says more
    if s.log_health is not None:
        return f"/health answered 200{at_words(s.log_health.at)}"
    m = s.latest_milestone
    if m is None:
        return ""
    if m.kind == "http_access":
        return f"HTTP requests answered ({m.get('method')} {m.get('path')} {m.get('status')}{at_words(m.at)})"
    if m.kind == "request_log":
        return f"requests received (--log-requests{at_words(m.at)})"
    if m.kind in ("eplb_begin", "eplb_end"):
        return "an EPLB rebalance (only a serving server rebalances)"
    if m.kind == "retract":
        return "requests retracted for lack of KV pool (the server serves)"
    return ""


def at_words(at: str | None) -> str:
    clock = fmt.clock_of(at)
    return f" at {clock}" if clock else ""


def _not_answering_for(s: Readiness, health: HealthResult | None, now: float) -> float | None:
    """Seconds since fired up, when a /health probe after that line got no HTTP answer (refused, hung)."""
    if health is None or health.outcome in ("ok", "starting", "http_error") or s.log_ready_at is None:
        return None
    checked = dict(s.health_checked_at).get("/health")
    if checked is None or checked < s.log_ready_at:
        return None
    return max(0.0, now - s.log_ready_at)


def decode_words(d: DecodeInfo) -> str:
    """ "3 running, 52.3 tok/s, accept len 1.52" (the last decode line's figures; "" when it had none)."""
    parts = []
    if d.running_req is not None:
        parts.append(f"{d.running_req} running")
    if d.gen_throughput is not None:
        parts.append(f"{d.gen_throughput:.1f} tok/s")
    if d.accept_len is not None:
        parts.append(f"accept len {d.accept_len:.2f}")
    return ", ".join(parts)


def behind_suffix(s: Readiness) -> str:
    """ "; behind docker-proxy (pid 812)": a forwarder holds the port the probes ask."""
    relay = behind(s)
    return f"; {relay}" if relay else ""


def gone_suffix(s: Readiness) -> str:
    return "; the server process is gone" if s.process_alive is False else ""


def unseen_suffix(s: Readiness) -> str:
    return f"; {cannot_see_line(s.process_owner_uid)}" if not s.process_visible else ""


def _log_file_suffix(s: Readiness) -> str:
    """A log that leaves nothing to read, named in the verdict (else it reads "waiting" or a frozen count)."""
    lf = s.log_file
    if lf is None or lf.status not in LOG_FILE_NAMED or s.phase in (Phase.READY, Phase.SERVING, Phase.FAILED):
        return ""
    if s.stall is None and nothing_found(s):
        return ""  # the reason is already what is missing
    return (": " if s.phase is Phase.STARTING and s.stall is None else "; ") + log_file_line(lf)


def _pace(bar: BarState, unit: str, now: float, s: Readiness) -> str:
    """ ", 7.1 shards/s, ETA 12 s" (decaying with the silence), or, once nothing moved for WITHDRAW_AFTER x the
    mean step interval, " · no progress for 45 s · stalled at 3m00s": never a frozen small number."""
    if bar.done >= bar.total > 0:
        return ""
    if bar.rate_per_s is None:
        return ""
    left, silent = eta.pace(s, bar, now)  # the one ETA rule: what the header's "ready in" rests on
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
    seen = s.tp_ranks_seen
    if s.server.tp_size is None and seen and seen[-1] >= 1:  # the tags give a lower bound only (tp_floor)
        return f"{n}/≥{max(seen[-1] + 1, n)} ranks"
    total = s.server.tp_size or (len(s.ranks) if s.ranks else None)
    if total:
        total = max(total, n)  # args that disagree with the ranks seen must not print "3/2"
    return f"{n}/{total} ranks" if total else f"{n} ranks"


# ------------------------------------------------------------------------------------------------ evidence


def evidence(s: Readiness, now: float | None = None) -> tuple[str, ...]:
    """The facts behind the verdict at clock time `now` (default the last event's), e.g. ("log: fired up
    12:01:02", "health: /health 200 ok 2 s ago")."""
    now = s.updated_at if now is None else now
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
    which, capture = current_capture(s)
    if capture is not None and s.phase is Phase.CUDA_GRAPH:  # the capture now only: one count on the screen
        items.append(f"log: {which} {capture.done}/{capture.total}")
    if s.jit_kernels:
        items.append(f"log: DeepGEMM JIT {s.jit_kernels} kernel shape{'s' if s.jit_kernels != 1 else ''}")
    if s.tp_inferred and s.server.tp_size is not None:
        items.append(f"log: tp {s.server.tp_size} {s.tp_inferred}")
    if s.tp_spans_nodes and s.server.tp_size is None:
        shown = ranks_span(tuple(f"TP{i}" for i in s.tp_ranks_seen)) or "no TP rank"
        items.append(f"log: the TP group spans nodes (custom allreduce off): more ranks than this log's {shown}")
    elif s.server.tp_size is None and tp_floor(s.tp_ranks_seen) is not None:
        items.append(f"log: {tp_floor(s.tp_ranks_seen)} (a lower bound: no line states the size)")
    if s.mid_run is not None:
        items.append(_join("log:", mid_run_words(s.mid_run), fmt.clock_of(s.mid_run.at)))
    if s.eplb_rebalancing:
        items.append("log: EPLB rebalancing experts (transient)")
    if s.weight_cache is not None and s.weight_cache.standalone:
        pids = ", ".join(str(p) for p in s.weight_cache.pids)
        items.append(
            _join("log: standalone weight cache daemon", f"(pid {pids})" if pids else "", "keeps its GPU memory")
        )
    if s.log_ready and (m is None or m.kind != "fired_up"):
        items.append("log: fired up")
    if s.decode is not None:
        items.append(_join("log: decode", decode_words(s.decode), fmt.clock_of(s.decode.at)))
    if s.error is not None and not from_processes(s.error):
        items.append(_join("log:", s.error.line.strip(), ""))
    for r in s.health:
        checked = dict(s.health_checked_at).get(r.endpoint)
        ago = fmt.ago(now - checked) if checked is not None else ""
        note = " (not a readiness signal)" if r.endpoint != "/health" and r.outcome == "ok" else ""
        items.append(_join(f"health: {r.endpoint}", health_text(r) + note, ago))
    if s.health_ready and s.phase in LOADING_PHASES:
        items.append(f"health: /health 200 while the log shows {phase_words(s.phase)}: another server on this port?")
    elif s.health_ready and s.phase in (Phase.STARTING, Phase.WARMUP):
        who, why = answerer(s)
        if who == FOREIGN:
            items.append(f"health: /health 200 from something else on {port_words(s)}: {why}")
    owner = s.port_owner
    if owner is not None and owner.pid is not None:
        words = {True: ": one of the server's processes", False: ": not one of the server's processes"}
        whose = words.get(owner.ours, "") if owner.ours is not None else ""
        if owner.forwarder:
            whose = f": {owner.forwarder}, a forwarder: the server answers behind it"
        elif owner.earlier:
            whose = ": an earlier launch in the same log, not its latest"
        command = f" ({printable(owner.command)})" if owner.command else ""
        items.append(f"port: {owner.port} is held by PID {owner.pid}{command}{whose}")
    if s.shutdown is not None and s.phase is not Phase.FAILED:
        items.append(_join("log: shutting down:", s.shutdown.line.strip(), fmt.clock_of(s.shutdown.at)))
    if s.process_alive is not None:
        alive = f"alive ({len(s.process_pids)} pids)" if s.process_alive else "gone"
        items.append(f"process: {alive}")
    elif not s.process_visible:
        items.append(f"process: {cannot_see_line(s.process_owner_uid)}")
    if s.log_file is not None:
        items += [f"log: {line}" for line in (log_file_line(s.log_file), symlink_line(s.log_file)) if line]
    if s.connection_since is not None and s.connection != "connected":
        items.append(_join(f"link: {s.connection}", s.connection_detail, ""))
    if s.watchdog_stacks:
        grouping = stacks.group(list(s.watchdog_stacks))
        items.append(f"log: SGLang's py-spy dump of {len(s.watchdog_stacks)} processes: {grouping.summary}")
    if s.stall is not None:
        items.append(f"stall: silent for {fmt.duration(now - s.stall.since)}, limit {fmt.duration(s.stall.limit_s)}")
    return tuple(items)


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)
