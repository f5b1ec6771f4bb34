"""Words the panes use for phases, milestones, health outcomes and control results."""

from __future__ import annotations

from tui.core.events import ControlResult
from tui.core.explain import PROCESS_EXITED, nothing_found_headline
from tui.core.fmt import gib_bytes
from tui.core.names import PHASE_NAMES, failed_phase, kind_words, phase_words
from tui.core.state import ErrorInfo, Phase, PhaseSpan, Readiness
from tui.core.verdict import stop_result

__all__ = ["PHASE_NAMES", "failed_phase", "kind_words", "phase_words"]  # how people say them: tui/core/names.py

# Short enough to keep the timeline's duration column aligned ("draft CUDA graph capture" is not).
_DRAFT_NAMES = {Phase.LOADING_WEIGHTS: "weights", Phase.CUDA_GRAPH: "CUDA graphs"}
DRAFT_LABEL_WIDTH = 19


def draft_label(span: PhaseSpan) -> str:
    """A draft span's name: "draft weights", "draft CUDA graphs" for the draft's decode capture (`Capture draft
    cuda graph`), and each other draft capture by its own ("draft extend graphs"), so that none reads twice."""
    what = " ".join(span.name.split())
    if span.phase is Phase.CUDA_GRAPH and what and what.lower() != "draft":
        label = what if "draft" in what.lower() else f"draft {what}"
        return (label + " graphs" if len(label) + 7 <= DRAFT_LABEL_WIDTH else label)[:DRAFT_LABEL_WIDTH]
    return f"draft {_DRAFT_NAMES.get(span.phase, PHASE_NAMES[span.phase])}"[:DRAFT_LABEL_WIDTH]


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
    # 0.5.14-0.5.23 lines: every kind a rank can print has a short word, so the ranks grid says what it is
    "dist_init": "init…",
    "kv_profile": "kv…",
    "jit_begin": "jit…",
    "jit_kernel": "jit…",
    "jit_end": "jit✓",
    "hf_snapshot": "load…",
    "weight_cache": "load…",
    "pd_bootstrap": "http",
    "pd_warmup_begin": "warmup",
    "pd_warmup_end": "warmup✓",
    "http_running": "http",
    "warmups_begin": "warmup",
    "warmups_end": "warmup✓",
    "eplb_begin": "eplb…",
    "eplb_end": "eplb✓",
    "shutdown": "stop…",
    # the steps a window of the log may start at (tui.core.logshapes)
    "load_step": "load…",
    "kernel_autotune": "tune…",
    "graph_step": "graph…",
    "compile_autotune": "tune…",
    "retract": "serving",
    "http_access": "http",
    "health_access": "http",
    "request_log": "serving",
}


def stopped_by_tool(state: Readiness) -> ControlResult | None:
    """The stop by sglang-tui that ended this launch (what was done, what is left), or None: the one place the
    views ask "stopped by us?" (the verdict answers: tui.core.verdict.stop_result)."""
    return stop_result(state)


def health_is_old(state: Readiness, endpoint: str) -> bool:
    """The endpoint's last answer came before this launch began (the old server's, after a restart)."""
    checked = dict(state.health_checked_at).get(endpoint)
    began = state.timeline[0].started_at if state.timeline else None
    return (
        checked is not None
        and began is not None
        and state.launches + (state.last_control is not None) > 0
        and checked < began
    )


def phase_label(state: Readiness) -> str:
    """The headline: the phase, STOPPED (by us, or by a signal from another shell: someone meant it, no failure),
    UNREACHABLE, STALLED in it, or what is missing (LOG MISSING)."""
    if stopped_by_tool(state) is not None or (state.error is not None and state.error.stopped_by == "outside"):
        return "STOPPED"
    if state.lost_at is not None and state.phase in (Phase.READY, Phase.SERVING):
        return "UNREACHABLE"  # its host cannot be reached: nothing says ready (tui.core.freshness); a startup
        # keeps its phase, with the link's own word beside it
    if state.stall is None and nothing_found_headline(state):  # LOG MISSING, not STARTING
        return nothing_found_headline(state)
    name = PHASE_NAMES.get(state.phase, state.phase.value).upper()
    if state.stall is not None and state.phase not in (Phase.FAILED, Phase.READY, Phase.SERVING):
        return f"STALLED in {name}"
    return name


def stopped_by_us(error: ErrorInfo | None) -> bool:
    """The failure is sglang-tui's own terminate/kill/stop (the reducer's line), not the server's doing."""
    return error is not None and error.stopped_by == "sglang-tui"


def error_badge(error: ErrorInfo) -> tuple[str, str]:
    """The badge before the cause line and its style: STOPPED (by us), EXITED (no process left), or the kind."""
    if stopped_by_us(error) or error.stopped_by == "outside":  # ours, or a signal from someone else (issue 17)
        return " ■ STOPPED ", "bold reverse yellow"
    if error.line == PROCESS_EXITED:
        return " ✗ EXITED ", "bold reverse red"
    if error.kind == "other":
        return " ✗ FAILED ", "bold reverse red"
    return f" ✗ {kind_words(error.kind).upper()} ", "bold reverse red"


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


def copy_words(what: str, path: str | None, through: str = "", problem: str | None = None) -> str:
    """What a copy did, as far as can be known: OSC 52 was sent (no terminal answers whether it obeyed), and where
    the text was saved; never "copied". `through`: the multiplexer it went through ("tmux"), "" for none."""
    via = f"OSC 52, through {through}" if through else "OSC 52"
    where = f"saved to {path}" if path and problem is None else (problem or "not saved")
    return f"sent {what} to the terminal's clipboard ({via}); {where}"
