"""Words the panes use for phases, milestones, health outcomes and control results."""

from __future__ import annotations

from tui.core.events import ControlResult
from tui.core.explain import PROCESS_EXITED, STOPPED_BY_TOOL
from tui.core.state import ErrorInfo, Phase, Readiness
from tui.core.fmt import gib_bytes

PHASE_NAMES: dict[Phase, str] = {
    Phase.STARTING: "starting",
    Phase.INIT: "init (distributed)",
    Phase.LOADING_WEIGHTS: "loading weights",
    Phase.KV_CACHE: "KV cache",
    Phase.CUDA_GRAPH: "CUDA graph capture",
    Phase.WARMUP: "warmup",
    Phase.READY: "ready",
    Phase.SERVING: "serving",
    Phase.FAILED: "failed",
}

#: Theme variable per phase (for badges).
PHASE_STYLES: dict[Phase, str] = {
    Phase.READY: "bold reverse green",
    Phase.SERVING: "bold reverse green",
    Phase.FAILED: "bold reverse red",
}

MILESTONE_SHORT: dict[str, str] = {
    "init_begin": "init…",
    "init_end": "init✓",
    "mem_baseline": "init✓",
    "load_begin": "load…",
    "load_end": "load✓",
    "load_straggler": "load slow",
    "kv_alloc": "kv…",
    "mem_pool_end": "kv✓",
    "graph_begin": "graph…",
    "graph_end": "graph✓",
    "max_tokens": "done✓",  # the last scheduler-init line: this rank is up (with or without CUDA graphs)
    "startup_timings": "up",
    "uvicorn_started": "http",
    "app_startup_complete": "http",
    "uvicorn_running": "http",
    "warmup_request": "warmup",
    "fired_up": "ready",
    "unbalanced_memory": "unbalanced!",
}


def phase_label(state: Readiness) -> str:
    """The headline: the phase, or STALLED in it."""
    name = PHASE_NAMES.get(state.phase, state.phase.value).upper()
    if state.stall is not None and state.phase not in (Phase.FAILED, Phase.READY, Phase.SERVING):
        return f"STALLED in {name}"
    return name


def stopped_by_us(error: ErrorInfo | None) -> bool:
    """The failure is sglang-tui's own terminate/kill/stop (the reducer's line), not the server's doing."""
    return error is not None and (error.stopped_by == "sglang-tui" or error.line.startswith(STOPPED_BY_TOOL + " ("))


def error_badge(error: ErrorInfo) -> tuple[str, str]:
    """The badge before the cause line and its style: STOPPED (by us), EXITED (no process left), or the kind."""
    if stopped_by_us(error) or error.stopped_by == "outside":  # ours, or a signal from someone else (issue 17)
        return " ■ STOPPED ", "bold reverse yellow"
    if error.line == PROCESS_EXITED:
        return " ✗ EXITED ", "bold reverse red"
    return f" ✗ {error.kind.upper()} ", "bold reverse red"


def control_summary(result: ControlResult) -> str:
    """One line on what an action achieved, from what the host reported (never assumed)."""
    head = f"{result.action} {'done' if result.ok else 'FAILED'}"
    parts = []
    if result.survivors:
        shown = ", ".join(str(p) for p in result.survivors[:4])
        more = "…" if len(result.survivors) > 4 else ""
        parts.append(f"{len(result.survivors)} process(es) left ({shown}{more})")
    elif result.action in ("terminate", "kill", "stop"):
        parts.append("no server process left")
    elif result.action == "restart" and result.ok:
        parts.append("the old processes are gone")
    if result.gpu_held:
        held = ", ".join(f"GPU{gpu} {gib_bytes(n)}" for gpu, _pid, n in result.gpu_held[:4])
        parts.append(f"GPU memory still held: {held}")
    elif result.action in ("terminate", "kill", "stop") and not result.survivors and not result.detail:
        parts.append("GPU memory released")
    if result.detail:
        parts.append(result.detail)
    return head + (": " + "; ".join(parts) if parts else "")


#: What each source is called when its worker crashed (tui.core.events.SourceFailed.source).
SOURCE_NAMES: dict[str, str] = {
    "log": "log tail",
    "health": "health probe",
    "gpus": "GPU probe",
    "processes": "process watch",
    "ticks": "clock",
}


def source_failure(source: str, message: str) -> str:
    """One line for a crashed source worker, e.g. "process watch failed (RuntimeError: boom); restarting"."""
    return f"{SOURCE_NAMES.get(source, source)} failed ({message}); restarting"
