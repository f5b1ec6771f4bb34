"""How people say the closed vocabularies: a phase ("loading weights", never `loading_weights`) and an error kind
("out of memory", never `oom`). Written once: the verdict's words (tui/core/wording.py), the panes and the
report all say them from here."""

from __future__ import annotations

from tui.core.state import Phase, Readiness

PHASE_NAMES: dict[Phase, str] = {
    Phase.QUEUED: "queued",
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

#: Error kinds (tui.core.state.ErrorInfo.kind) as people say them.
ERROR_KIND_NAMES: dict[str, str] = {
    "oom": "out of memory",
    "nccl": "NCCL",
    "port_in_use": "port in use",
    "model_not_found": "model not found",
    "exception": "exception",
    "other": "error",
    "slurm_job": "Slurm",
}


def phase_words(phase: Phase) -> str:
    """A phase as people say it ("loading weights"), never the enum's name."""
    return PHASE_NAMES.get(phase, phase.value.replace("_", " "))


def kind_words(kind: str) -> str:
    """An error kind in words ("out of memory"); an unknown kind without its underscores."""
    return ERROR_KIND_NAMES.get(kind, kind.replace("_", " "))


def failed_phase(state: Readiness) -> Phase | None:
    """The phase the launch was in when it failed or was stopped (the span before the FAILED one)."""
    if state.phase is not Phase.FAILED:
        return None
    main = [s for s in state.timeline if s.model == "main"]
    for span in reversed(main):
        if span.phase is not Phase.FAILED:
            return span.phase
    return None
