"""The closed vocabularies the events and the state use: each a Literal, so mypy checks every use.

They stay strings at run time (the JSON contract prints them as they are), and each is written here once.
"""

from __future__ import annotations

from typing import Literal, TypeGuard, get_args

# a startup milestone of a scheduler or the main process (tui.core.logmilestones, tui.core.logshapes, the parser)
MilestoneKind = Literal[
    "init_begin", "init_end", "mem_baseline", "load_begin", "load_end", "kv_alloc", "mem_pool_end", "graph_begin",
    "graph_end", "max_tokens", "startup_timings", "uvicorn_started", "app_startup_complete", "uvicorn_running",
    "warmup_request", "fired_up", "unbalanced_memory", "load_straggler", "dist_init", "kv_profile", "jit_begin",
    "jit_kernel", "jit_end", "hf_snapshot", "weight_cache", "pd_bootstrap", "pd_warmup_begin", "pd_warmup_end",
    "http_running", "warmups_begin", "warmups_end", "eplb_begin", "eplb_end", "shutdown",
    # steps that place a window of the log in a phase (tui.core.logshapes); access lines outside the warmup
    "load_step", "kernel_autotune", "graph_step", "compile_autotune", "retract", "http_access", "health_access",
    "request_log",
]  # fmt: skip
ConnectionStatus = Literal["connecting", "connected", "reconnecting", "failed"]
# why a server's facts are not fresh (tui/core/freshness.py): "" fresh, the link lost, the process watch quiet
LostBy = Literal["", "link", "watch"]
# what one HTTP probe got: 200 (ok), 503 (starting), another status (http_error), a 2xx with the wrong body
# (garbage), no listener (refused), no answer in time (timeout), anything else (error)
HealthOutcome = Literal["ok", "starting", "http_error", "garbage", "refused", "timeout", "error"]
# the one /server_info read: an HealthOutcome, or an answer naming another model (foreign)
ServerInfoOutcome = Literal["ok", "starting", "http_error", "garbage", "refused", "timeout", "error", "foreign"]
ControlAction = Literal["launch", "restart", "terminate", "kill", "stop"]
StopAction = Literal["terminate", "kill", "stop", "restart"]  # restart stops first
ErrorKind = Literal["oom", "nccl", "port_in_use", "model_not_found", "exception", "other"]
StoppedBy = Literal["", "sglang-tui", "outside"]  # who stopped it: not a stop, our own, someone else's signal
BarName = Literal["weights", "draft_weights", "capture", "piecewise", "jit", "warmup"]
CaptureBar = Literal["capture", "piecewise"]  # the CUDA graph capture bars: the regular one, 0.5.x's piecewise one
LogResetReason = Literal["truncated", "rotated", "missing", "appeared", "started_at_last_launch", "skipped"]
BatchStage = Literal["prefill", "decode"]
# who read the GPUs: the probe's backends, "none" (no driver on the host), "probe" (the probe itself failed)
GpuSource = Literal["nvml", "nvidia-smi", "sim", "none", "probe"]

HEALTH_OUTCOMES: frozenset[str] = frozenset(get_args(HealthOutcome))
ERROR_KINDS: frozenset[str] = frozenset(get_args(ErrorKind))

CONTROL_ACTIONS: frozenset[str] = frozenset(get_args(ControlAction))


GPU_SOURCES: frozenset[str] = frozenset(get_args(GpuSource))


def _is_control_action(word: str) -> TypeGuard[ControlAction]:
    return word in CONTROL_ACTIONS


def _is_gpu_source(word: str) -> TypeGuard[GpuSource]:
    return word in GPU_SOURCES


def control_action(word: str, default: ControlAction = "stop") -> ControlAction:
    """`word` as a ControlAction when it is one, else `default` (text from a log line or a key binding)."""
    return word if _is_control_action(word) else default


def gpu_source(word: str) -> GpuSource:
    """The probe line's `source` as a GpuSource; a word this version does not know is the probe's."""
    return word if _is_gpu_source(word) else "probe"
