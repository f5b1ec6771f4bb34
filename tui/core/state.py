"""The readiness model's state: one frozen value that every view (TUI, `wait`, `replay`) renders.

Built only by `tui.core.readiness.reduce(state, event, now)`. Equal states compare equal, so a view can
skip redrawing when nothing changed. This module is a contract shared by the reducer and the views: add
fields with defaults, never rename or remove.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tui.core.activity import ActivityState
from tui.core.events import ControlResult, GpuSnapshot, HealthResult, LogFile, Milestone, PortOwner
from tui.core.past import Past
from tui.core.stacks import ProcessStack


class Phase(str, Enum):
    """Startup phases, in order; FAILED can follow any of them."""

    STARTING = "starting"  # launched / attached, nothing from the ranks yet
    INIT = "init"  # torch distributed / parallel init
    LOADING_WEIGHTS = "loading_weights"
    KV_CACHE = "kv_cache"
    CUDA_GRAPH = "cuda_graph"
    WARMUP = "warmup"  # uvicorn up, warmup request, /health 503
    READY = "ready"
    SERVING = "serving"  # requests being decoded
    FAILED = "failed"


PHASE_ORDER: tuple[Phase, ...] = tuple(Phase)


@dataclass(frozen=True)
class PhaseSpan:
    """One entry of the timeline. `start`/`end` are log timestamps as printed (None when unknown);
    `started_at`/`ended_at` are the reducer's clock (`now`) when the phase began/ended.
    model is "main" or "draft" (the draft model's loading and capture are spans inside the main phase)."""

    phase: Phase
    start: str | None = None
    end: str | None = None
    started_at: float = 0.0
    ended_at: float | None = None
    model: str = "main"
    duration_s: float | None = None  # from log times when both ends have them, else from the clock
    start_t: float | None = None  # log time (event.t) the span began, when the log had one
    end_t: float | None = None  # log time the span ended, when the log had one


@dataclass(frozen=True)
class BarState:
    """A progress bar as the model sees it: max seen done/total, rate and ETA."""

    done: int
    total: int
    rate_per_s: float | None = None
    eta_s: float | None = None
    started_at: float = 0.0
    updated_at: float = 0.0
    bs: int | None = None  # capture bars: batch size in capture
    avail_mem_gb: float | None = None
    samples: tuple[tuple[float, int], ...] = ()  # recent (time, done) points behind rate_per_s, bounded
    sample_clock: str = ""  # "tqdm" (the frame's own elapsed), "log" (log times) or "clock" (now): never mixed
    label: str = ""  # the bar's description as printed


@dataclass(frozen=True)
class RankState:
    """One rank: last milestone, memory figures from its log lines, and where it runs (when known)."""

    name: str  # "TP0", "DP1 TP3", …
    last_milestone: str | None = None
    avail_mem_gb: float | None = None
    mem_usage_gb: float | None = None
    updated_at: float = 0.0
    gpu_index: int | None = None
    pid: int | None = None


@dataclass(frozen=True)
class ServerInfo:
    model: str | None = None
    tp_size: int | None = None
    speculative: str | None = None  # "EAGLE3" | "unknown" | None
    draft_model: str | None = None
    port: int | None = None
    tp_from_args: bool = False  # tp_size came from server_args (else inferred from the highest TP rank seen)
    # the rest of the launch's key (issue 9 history): None when the log did not say
    dp_size: int | None = None
    pp_size: int | None = None
    ep_size: int | None = None
    nnodes: int | None = None
    load_format: str | None = None
    quantization: str | None = None
    version: str | None = None  # SGLang's version when the log shows it
    args_hash: str | None = None  # hash of the other server_args (volatile ones like port and seed left out)


@dataclass(frozen=True)
class ErrorInfo:
    kind: str  # oom | nccl | port_in_use | model_not_found | exception | other
    line: str
    at: str | None = None
    root_cause: bool = True
    stopped_by: str = ""  # "sglang-tui" (our own stop) | "outside" (a signal from someone else) | "" (not a stop)


@dataclass(frozen=True)
class WeightCacheInfo:
    """SGLang's weight cache daemon (0.5.23), as the log shows it.

    standalone: the daemon was started on its own (`--weight-cache-mode client`): it is meant to keep its GPU
    memory after the server exits, so that memory is not the server's to release. pids: the daemon processes
    the log named (`Launched weight cache daemon … pid=N`, `… liveness watchdog for pid=N`)."""

    standalone: bool = False
    pids: tuple[int, ...] = ()
    mode: str | None = None  # "daemon" (co-terminal with the engine) | "client" | None (not said)


@dataclass(frozen=True)
class DecodeInfo:
    accept_len: float | None = None
    accept_rate: float | None = None
    gen_throughput: float | None = None
    running_req: int | None = None
    token_usage: float | None = None
    at: str | None = None


@dataclass(frozen=True)
class StallInfo:
    """No progress on any signal for longer than the phase allows, while the process lives."""

    since: float  # clock time of the last progress
    limit_s: float  # how long this phase is allowed to be silent
    detail: str = ""


@dataclass(frozen=True)
class WeightsMem:
    """GPU memory growth of the server's GPUs while the weights load: the mean over the GPUs, in GiB."""

    baseline: tuple[tuple[int, int], ...]  # (gpu index, used bytes) before the weights
    samples: tuple[tuple[float, float], ...] = ()  # recent (clock, mean growth GiB), bounded
    moved_at: float = 0.0  # clock time the growth last moved
    moves: tuple[float, ...] = ()  # recent clock times the growth moved, bounded
    peak_gib: float = 0.0  # the most the mean growth reached

    def mean_move_interval(self) -> float | None:
        if len(self.moves) < 2:
            return None
        return (self.moves[-1] - self.moves[0]) / (len(self.moves) - 1)


@dataclass(frozen=True)
class Readiness:
    phase: Phase = Phase.STARTING
    phase_since: float = 0.0  # clock time the current phase began
    phase_since_log: str | None = None  # log timestamp the current phase began
    first_seen_at: float | None = None  # clock time of the first event
    reason: str = "waiting for the first log line"  # one line: why the model says what it says
    evidence: tuple[str, ...] = ()  # the facts behind the verdict, e.g. ("log: fired up 12:01:02", "health: 200")
    log_ready: bool = False  # the log said "fired up"
    health_ready: bool = False  # /health answered 200
    health_reachable: bool = False  # some HTTP probe got an HTTP answer (of any status)
    server: ServerInfo = ServerInfo()
    timeline: tuple[PhaseSpan, ...] = ()
    shards: BarState | None = None  # main model weights
    draft_shards: BarState | None = None
    capture: BarState | None = None  # CUDA graph capture batches (current bar)
    ranks: tuple[RankState, ...] = ()  # sorted by rank name
    error: ErrorInfo | None = None
    decode: DecodeInfo | None = None
    decode_history: tuple[
        tuple[float, float | None, float | None], ...
    ] = ()  # (t, gen_throughput, accept_len), bounded
    stall: StallInfo | None = None
    last_progress_at: float | None = None
    log_offset: int = 0
    launches: int = (
        0  # LaunchStarted seen (a new launch in the same log; a truncated/rotated log or our own launch is not)
    )
    health: tuple[HealthResult, ...] = ()  # latest result per endpoint
    health_checked_at: tuple[tuple[str, float], ...] = ()  # (endpoint, clock time of that result)
    gpus: GpuSnapshot | None = None
    gpus_at: float | None = None
    gpu_history: tuple[tuple[int, tuple[float, ...]], ...] = ()  # (gpu index, recent used fractions), bounded
    gpu_util_history: tuple[tuple[int, tuple[float | None, ...]], ...] = ()  # (gpu index, recent util %), bounded
    gpu_history_at: tuple[float, ...] = ()  # when each of the recent samples came (the newest last), bounded
    connection: str = "connecting"  # connecting | connected | reconnecting | failed
    connection_detail: str = ""
    connection_since: float | None = None
    process_alive: bool | None = None  # None: unknown (replay, or no control channel)
    process_pids: tuple[int, ...] = ()
    last_control: ControlResult | None = None
    stall_after: float | None = None  # set once by the caller: overrides every per-phase stall limit (seconds)
    launched: bool = False  # a launch was seen (server_args, a new launch, a startup line, or our own launch)
    updated_at: float = 0.0  # clock time of the last event reduced
    last_log_at: str | None = None  # log timestamp of the last timestamped log event
    last_progress: str = ""  # which signal progressed last, e.g. "shards 57/64", "log bytes", "GPU memory"
    milestone_ranks: tuple[tuple[str, tuple[str, ...]], ...] = ()  # milestone kind -> ranks that printed it
    tp_rank_max: int | None = None  # the highest TP index seen in rank labels
    latest_milestone: Milestone | None = None  # the last main-model milestone line (for the evidence)
    log_ready_at: float | None = None  # clock time the log said fired up (a /health probe after it decides)
    last_control_at: float | None = None  # clock time last_control arrived
    log_restart_at: float | None = None  # clock time the log last showed a new start (truncated, rotated, a new launch)
    source_failures: tuple[
        tuple[str, str, float], ...
    ] = ()  # (source, message, clock time): the latest crash per source
    process_visible: bool = True  # False: the server's processes cannot be seen (another uid's /proc)
    process_owner_uid: int | None = None  # the uid that owns them, when known
    log_file: LogFile | None = None  # what the log path is (missing, a directory, rotated and followed, …)
    # SGLang 0.5.14 … 0.5.23 startup shapes (issue 12)
    piecewise: BarState | None = None  # piecewise CUDA graph: `Capturing num tokens` / `Compiling num tokens` bar
    jit: BarState | None = None  # DeepGEMM JIT: the `DeepGEMM warmup` bar of the kernel shape compiling now
    jit_kernels: int = 0  # DeepGEMM kernel shapes compiled (`Try DeepGEMM JIT Compiling for <KIND> N=…, K=…`)
    jit_active: bool = False  # a DeepGEMM JIT pre-compile session began and nothing after it (capture end…) yet
    warmup_bar: BarState | None = None  # `Warmup prefill shapes` / `Profiling prefill latency for dynamic chunking`
    http_server: str | None = None  # "uvicorn" | "rust" | "granian" once the log says which one listens
    http_workers: int | None = None  # `Uvicorn running on … with N SO_REUSEPORT workers`
    pd_bootstrap: bool = False  # a PD disaggregation bootstrap server started
    pd_warmup: str | None = None  # PD warmup: "running" | "ok" | "failed"
    eplb_rebalancing: bool = False  # `[EPLBManager] rebalance start` without its end yet: transient, not a failure
    eplb_rebalances: int = 0  # rebalances completed
    hf_snapshot: str | None = None  # "local" (found in the HF cache, no download) | "download"
    weight_cache: WeightCacheInfo | None = None  # the weight cache daemon, when the log shows one
    tp_ranks_seen: tuple[int, ...] = ()  # TP indexes seen in rank labels, sorted
    prefill_lines: int = 0  # prefill lines seen while no phase was in view (one alone may be the warmup's)
    tp_inferred: str = ""  # how tp_size was inferred when server_args did not say (empty: from args, or unknown)
    activity: ActivityState | None = None  # signals beyond the log: compilers, CPU, disk reads, HF download (issue 13)
    watchdog_stacks: tuple[ProcessStack, ...] = ()  # SGLang's own py-spy dumps in the log, the latest per rank
    jit_named: str | None = None  # the JIT the log names ("DeepGEMM", "FlashInfer"), for the compilers it runs
    # Set once by the caller: True when /health is probed (wait, the TUI), False when it is not by choice
    # (--no-health: ready may then rest on the log alone), None when not told (replay: probed once a /health
    # result arrives).
    health_probed: bool | None = None
    health_port: int | None = None  # set once by the caller: the port the probes ask (for the words)
    log_watched: bool | None = None  # set once by the caller: a --log is tailed (True), none given (False)
    # set once by the caller: a process watch runs (wait, the TUI). The log's fired up then vouches for a /health
    # 200 only once the watch found the log's server alive (when it can see it): a finished run's log vouches for
    # nothing that answers now.
    process_watched: bool | None = None
    health_ok_since: float | None = None  # clock time the current run of /health 200s began
    log_grew_at: float | None = None  # clock time log bytes last arrived
    port_owner: PortOwner | None = None  # who listens on the port (the process watch), latest
    shutdown: Milestone | None = None  # this launch's log said it is shutting down (SIGTERM received, uvicorn)
    past: Past | None = None  # earlier launches of this key, loaded by the caller from the history (issue 9)
    weights_mem: WeightsMem | None = None  # GPU memory growth during loading_weights (the byte ETA)
    startup_timings: tuple[tuple[str, float], ...] = ()  # SGLang's own `Engine startup timings (s)` figures
    startup_time: tuple[tuple[str, float], ...] = ()  # the same from /server_info's `startup_time` (0.5.23), read once
    server_info: str | None = (
        None  # the outcome of that one /server_info read (ok, http_error, timeout, …); None: none yet
    )
    weight_files: tuple[str, int, int] | None = None  # (model, bytes, files) of its safetensors on the host
