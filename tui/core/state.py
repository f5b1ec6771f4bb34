"""The readiness model's state: one frozen value, made of small records (one per fact), that every view (TUI,
`wait`, `replay`) renders.

Built by `tui.core.readiness.reduce(state, event, now)` (a caller's first state: `Readiness.of(...)`). Equal facts
compare equal (the clock stamp `updated_at` is left out, and the state holds no words), so a view can skip
redrawing when nothing changed. This module is a contract shared by the reducer and the views: add facts with
defaults, never rename or remove one.
"""

from __future__ import annotations

from dataclasses import field, fields
from enum import Enum
from typing import TYPE_CHECKING, Generic, TypedDict, TypeVar, overload

from tui.core.activity import ActivityState
from tui.core.clockmap import ClockMap
from tui.core.events import (
    ControlResult,
    GpuSnapshot,
    HealthResult,
    LogClues,
    LogFile,
    Milestone,
    PortOwner,
    SlurmJobState,
)
from tui.core.past import Past
from tui.core.record import Record, record
from tui.core.stacks import ProcessStack
from tui.core.vocab import (
    CaptureBar,
    ConnectionStatus,
    ControlAction,
    ErrorKind,
    LostBy,
    ServerInfoOutcome,
    StoppedBy,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from 3.11

T = TypeVar("T")


class Phase(str, Enum):
    """Startup phases, in order; FAILED can follow any of them."""

    QUEUED = "queued"  # a Slurm job waiting in the queue: nothing of the server can run yet
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


@record
class PhaseSpan(Record):
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
    name: str = ""  # a draft capture's name as the log says it ("draft", "draft extend"): one span per name


@record
class BarState(Record):
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
    zero_at: float | None = None  # our clock at the bar's tqdm elapsed 0 (times a frame read from the history)


@record
class RankState(Record):
    """One rank: last milestone, memory figures from its log lines, and where it runs (when known)."""

    name: str  # "TP0", "DP1 TP3", …
    last_milestone: str | None = None
    avail_mem_gb: float | None = None
    mem_usage_gb: float | None = None
    updated_at: float = 0.0
    gpu_index: int | None = None
    pid: int | None = None


@record
class ServerInfo(Record):
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


@record
class ErrorInfo(Record):
    kind: ErrorKind
    line: str
    at: str | None = None
    root_cause: bool = True
    stopped_by: StoppedBy = ""
    rank: str | None = None  # the rank whose line says why (its `[… TP3]` prefix, or its traceback's marker)
    action: ControlAction | None = None  # stopped by sglang-tui: what it did (terminate, kill, stop)


@record
class WeightCacheInfo(Record):
    """SGLang's weight cache daemon (0.5.23), as the log shows it.

    standalone: the daemon was started on its own (`--weight-cache-mode client`): it is meant to keep its GPU
    memory after the server exits, so that memory is not the server's to release. pids: the daemon processes
    the log named (`Launched weight cache daemon … pid=N`, `… liveness watchdog for pid=N`)."""

    standalone: bool = False
    pids: tuple[int, ...] = ()
    mode: str | None = None  # "daemon" (co-terminal with the engine) | "client" | None (not said)


@record
class DecodeInfo(Record):
    accept_len: float | None = None
    accept_rate: float | None = None
    gen_throughput: float | None = None
    running_req: int | None = None
    token_usage: float | None = None
    at: str | None = None


@record
class StallInfo(Record):
    """No progress on any signal for longer than the phase allows, while the process lives."""

    since: float  # clock time of the last progress
    limit_s: float  # how long this phase is allowed to be silent
    detail: str = ""


@record
class WeightsMem(Record):
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


class Fact(Generic[T]):
    """A flat read of one fact kept in one of Readiness's records: `state.shards` is `state.bars.shards`.

    The views and `wait` read facts by name; the reducer writes the record an event touches."""

    def __init__(self, record: str) -> None:
        self.record = record
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Fact[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Fact[T] | T:
        if obj is None:
            return self
        value: T = getattr(getattr(obj, self.record), self.name)
        return value


@record
class MidRun(Record):
    """The phase was read from a line with no launch line (`server_args=`) before it: the log is a window that
    starts mid-run (rotated, size-capped, `kubectl logs --tail`). kind: the line's kind (a milestone kind, a bar
    name, "batch", or "rank" for a rank's line of no kind the parser knows); phase: the phase it placed."""

    kind: str
    phase: Phase
    rank: str | None = None
    line: str = ""
    at: str | None = None


@record
class LaunchFacts(Record):
    """Where this launch stands: the phase, since when, how it got there, and how it ended."""

    phase: Phase = Phase.STARTING
    phase_since: float = 0.0  # clock time the current phase began
    phase_since_log: str | None = None  # log timestamp the current phase began
    first_seen_at: float | None = None  # clock time of the first event
    timeline: tuple[PhaseSpan, ...] = ()
    launched: bool = False  # a launch was seen (server_args, a new launch, a startup line, or our own launch)
    launches: int = 0  # LaunchStarted seen (a new launch in the same log; a truncated/rotated log or ours is not)
    log_restart_at: float | None = None  # clock time the log last showed a new start (truncated, rotated, a launch)
    error: ErrorInfo | None = None
    shutdown: Milestone | None = None  # this launch's log said it is shutting down (SIGTERM received, uvicorn)
    log_ready: bool = False  # the log said "fired up"
    log_ready_at: float | None = None  # clock time the log said fired up (a /health probe after it decides)
    # the fired-up line's log time (as printed, and as seconds): ready is dated there when a /health 200 confirms it
    log_ready_stamp: tuple[str | None, float | None] = (None, None)
    mid_run: MidRun | None = None  # the first phase came from a window of the log with no launch line before it
    launch_line: bool = False  # this launch's `server_args=` line is in the log read (its start is in view)
    failed_log_offset: int | None = None  # how far the log was read when it failed (the end of the failure's bytes)
    slurm_job: SlurmJobState | None = None  # the Slurm job it runs in, as the last look at the queue said
    slurm_job_at: float | None = None  # clock time of that look (its queued_s and starts_in_s count from it)


@record
class LogFacts(Record):
    """What this launch's log lines said, beyond the phase."""

    latest_milestone: Milestone | None = None  # the last main-model milestone line (for the evidence)
    milestone_ranks: tuple[tuple[str, tuple[str, ...]], ...] = ()  # milestone kind -> ranks that printed it
    startup_timings: tuple[tuple[str, float], ...] = ()  # SGLang's own `Engine startup timings (s)` figures
    watchdog_stacks: tuple[ProcessStack, ...] = ()  # SGLang's own py-spy dumps in the log, the latest per rank
    decode: DecodeInfo | None = None
    decode_history: tuple[tuple[float, float | None, float | None], ...] = ()  # (t, gen tput, accept_len), bounded
    prefill_lines: int = 0  # prefill lines seen while no phase was in view (one alone may be the warmup's)
    log_health: Milestone | None = None  # an access line of a /health 200 with no launch in view (the server is up)
    clues: LogClues | None = None  # what a remedy reads in the log (tui/core/remedy.py)


@record
class ShapeFacts(Record):
    """SGLang 0.5.14 … 0.5.23 startup shapes (issue 12): JIT, HTTP server, PD, EPLB, HF snapshot, weight cache."""

    jit_kernels: int = 0  # DeepGEMM kernel shapes compiled (`Try DeepGEMM JIT Compiling for <KIND> N=…, K=…`)
    jit_active: bool = False  # a DeepGEMM JIT pre-compile session began and nothing after it (capture end…) yet
    jit_named: str | None = None  # the JIT the log names ("DeepGEMM", "FlashInfer"), for the compilers it runs
    http_server: str | None = None  # "uvicorn" | "rust" | "granian" once the log says which one listens
    http_workers: int | None = None  # `Uvicorn running on … with N SO_REUSEPORT workers`
    pd_bootstrap: bool = False  # a PD disaggregation bootstrap server started
    pd_warmup: str | None = None  # PD warmup: "running" | "ok" | "failed"
    eplb_rebalancing: bool = False  # `[EPLBManager] rebalance start` without its end yet: transient, not a failure
    eplb_rebalances: int = 0  # rebalances completed
    hf_snapshot: str | None = None  # "local" (found in the HF cache, no download) | "download"
    weight_cache: WeightCacheInfo | None = None  # the weight cache daemon, when the log shows one


@record
class BarFacts(Record):
    """The progress bars, and what the weights' progress is measured against."""

    shards: BarState | None = None  # main model weights
    draft_shards: BarState | None = None
    capture: BarState | None = None  # CUDA graph capture batches (current bar)
    piecewise: BarState | None = None  # piecewise CUDA graph: `Capturing num tokens` / `Compiling num tokens` bar
    capture_now: CaptureBar | None = None  # which of the two the latest capture began (tui.core.capture reads it)
    jit: BarState | None = None  # DeepGEMM JIT: the `DeepGEMM warmup` bar of the kernel shape compiling now
    warmup_bar: BarState | None = None  # `Warmup prefill shapes` / `Profiling prefill latency for dynamic chunking`
    weights_mem: WeightsMem | None = None  # GPU memory growth during loading_weights (the byte ETA)
    weight_files: tuple[str, int, int] | None = None  # (model, bytes, files) of its safetensors on the host


@record
class RankFacts(Record):
    """The ranks, and what their labels say of the TP size."""

    ranks: tuple[RankState, ...] = ()  # sorted by rank name (tui.core.ranklabels)
    tp_rank_max: int | None = None  # the highest TP index seen in rank labels
    tp_ranks_seen: tuple[int, ...] = ()  # TP indexes seen in rank labels, sorted
    tp_inferred: str = ""  # how tp_size was inferred when server_args did not say (empty: from args, or unknown)
    tp_nranks: int | None = None  # the largest NCCL communicator the log names (`nranks 16`): TP × PP
    tp_spans_nodes: bool = False  # `… this process group spans across nodes`: the TP group has ranks on other nodes
    pp_seen: bool = False  # a rank label carries a PP token (SGLang prints it only when pp_size > 1)


@record
class HealthFacts(Record):
    """What the HTTP probes answered."""

    health: tuple[HealthResult, ...] = ()  # latest result per endpoint
    health_checked_at: tuple[tuple[str, float], ...] = ()  # (endpoint, clock time of that result)
    health_reachable: bool = False  # some HTTP probe got an HTTP answer (of any status)
    health_ready: bool = False  # /health answered 200
    health_ok_since: float | None = None  # clock time the current run of /health 200s began
    server_info: ServerInfoOutcome | None = (
        None  # the outcome of the one /server_info read (ok, http_error, …); None: none yet
    )
    startup_time: tuple[tuple[str, float], ...] = ()  # /server_info's `startup_time` (0.5.23), read once
    probe_logged_at: float | None = None  # clock time the log, read live, last showed one of our own requests


@record
class GpuFacts(Record):
    gpus: GpuSnapshot | None = None
    gpus_at: float | None = None
    gpu_history: tuple[tuple[int, tuple[float, ...]], ...] = ()  # (gpu index, recent used fractions), bounded
    gpu_util_history: tuple[tuple[int, tuple[float | None, ...]], ...] = ()  # (gpu index, recent util %), bounded
    gpu_history_at: tuple[float, ...] = ()  # when each of the recent samples came (the newest last), bounded


@record
class LinkFacts(Record):
    """The connection to the host, and the sources that crashed."""

    connection: ConnectionStatus = "connecting"
    connection_detail: str = ""
    connection_since: float | None = None
    source_failures: tuple[tuple[str, str, float], ...] = ()  # (source, message, clock time): latest per source
    # Freshness (tui/core/freshness.py): while the host cannot be reached, or its process watch has gone quiet
    # past its cadence, lost_at is when it was last heard from and lost_by says which ("link" | "watch").
    lost_at: float | None = None
    lost_by: LostBy = ""


@record
class ProcessFacts(Record):
    """The server's processes as the process watch sees them."""

    process_alive: bool | None = None  # None: unknown (replay, or no control channel)
    process_pids: tuple[int, ...] = ()
    process_visible: bool = True  # False: the server's processes cannot be seen (another uid's /proc)
    process_owner_uid: int | None = None  # the uid that owns them, when known
    port_owner: PortOwner | None = None  # who listens on the port (the process watch), latest
    activity: ActivityState | None = None  # signals beyond the log: compilers, CPU, disk reads (issue 13)
    process_titled: tuple[tuple[int, str], ...] = ()  # (pid, title) of its live SGLang-titled processes (ranks…)
    process_checked_at: float | None = None  # clock time of the process watch's last report
    quiet_writers: tuple[int, ...] = ()  # its writers that had not written to the log when found (ServerProcess)
    quiet_log_size: int | None = None  # … and the log's size then


@record
class ControlFacts(Record):
    last_control: ControlResult | None = None
    last_control_at: float | None = None  # clock time last_control arrived


@record
class ProgressFacts(Record):
    """The last progress on any signal, and the stall verdict it gives."""

    last_progress_at: float | None = None  # our clock: from the log's own time for log signals (tui.core.clocks)
    last_progress: str = ""  # which signal progressed last, e.g. "shards 57/64", "log bytes", "GPU memory"
    last_progress_logged: bool = False  # the last progress was the log's (its bytes, a line, a bar), not another signal
    last_progress_log: str | None = None  # … and the stamp of its line as printed, when that line had one
    stall: StallInfo | None = None
    last_log_at: str | None = None  # log timestamp of the last timestamped log event
    last_log_t: float | None = None  # the same as log time (event.t)
    clock: ClockMap | None = None  # the log's clock on ours, and where the history read at a look ends
    reading_history: bool = False  # the log events being folded were written before the look (not live)
    log_skipped: int = 0  # bytes of a large log not read (between the launch's first lines and its last ones)
    log_grew_at: float | None = None  # clock time log bytes last arrived
    log_read_at: float | None = None  # clock time the watch's first log bytes arrived (what the log held then)
    log_offset: int = 0
    log_file: LogFile | None = None  # what the log path is (missing, a directory, rotated and followed, …)


@record
class TriedChange(Record):
    """A remedy a restart ran with (`r`, "restart with this change"): the changes as (flag, value, was), the
    failure it was for, and the start mark of the launch that failed (tui.history.record): the history keeps it
    with each launch that ran the edited command, so `history --compare` can say whether it helped."""

    changes: tuple[tuple[str, str, str | None], ...]
    cause: str | None = None  # the failed launch's error kind (oom, nccl, …)
    after: str | None = None  # the failed launch's start mark

    def to_json(self) -> dict[str, object]:
        return {
            "changes": [{"flag": f, "value": v, "was": w} for f, v, w in self.changes],
            "cause": self.cause,
            "after": self.after,
        }


@record
class WatchSetup(Record):
    """Set once by the caller: how this watch is set up, and what the history says of earlier launches."""

    stall_after: float | None = None  # overrides every per-phase stall limit (seconds)
    # True when /health is probed (wait, the TUI), False when it is not by choice (--no-health: ready may then rest
    # on the log alone), None when not told (replay: probed once a /health result arrives).
    health_probed: bool | None = None
    health_port: int | None = None  # the port the probes ask (for the words)
    log_watched: bool | None = None  # a --log is tailed (True), none given (False)
    # a process watch runs (wait, the TUI). The log's fired up then vouches for a /health 200 only once the watch
    # found the log's server alive (when it can see it): a finished run's log vouches for nothing that answers now.
    process_watched: bool | None = None
    # the command the watcher launches the server with (--launch): a remedy's `command` is it with the changes
    launch_command: str | None = None
    tried_change: TriedChange | None = None  # the remedy `launch_command` was edited with (the TUI's `r`)
    past: Past | None = None  # earlier launches of this key, loaded by the caller from the history (issue 9)


@record
class Readiness(Record):
    """The whole state: one record per fact. Facts only: its verdict is `tui.core.verdict.decide(state)`, its
    words `tui.core.wording.verdict_line(state, now)` and `tui.core.explain.evidence(state, now)`."""

    launch: LaunchFacts = LaunchFacts()
    server: ServerInfo = ServerInfo()
    logged: LogFacts = LogFacts()
    shape: ShapeFacts = ShapeFacts()
    bars: BarFacts = BarFacts()
    rankset: RankFacts = RankFacts()
    probes: HealthFacts = HealthFacts()
    gpu: GpuFacts = GpuFacts()
    link: LinkFacts = LinkFacts()
    proc: ProcessFacts = ProcessFacts()
    control: ControlFacts = ControlFacts()
    progress: ProgressFacts = ProgressFacts()
    setup: WatchSetup = WatchSetup()
    updated_at: float = field(default=0.0, compare=False)  # clock time of the last event: a stamp, not a fact

    phase = Fact[Phase]("launch")
    phase_since = Fact[float]("launch")
    phase_since_log = Fact[str | None]("launch")
    first_seen_at = Fact[float | None]("launch")
    timeline = Fact[tuple[PhaseSpan, ...]]("launch")
    launched = Fact[bool]("launch")
    launches = Fact[int]("launch")
    log_restart_at = Fact[float | None]("launch")
    error = Fact[ErrorInfo | None]("launch")
    shutdown = Fact[Milestone | None]("launch")
    log_ready = Fact[bool]("launch")
    log_ready_at = Fact[float | None]("launch")
    log_ready_stamp = Fact[tuple[str | None, float | None]]("launch")
    mid_run = Fact[MidRun | None]("launch")
    launch_line = Fact[bool]("launch")
    failed_log_offset = Fact[int | None]("launch")
    slurm_job = Fact[SlurmJobState | None]("launch")
    slurm_job_at = Fact[float | None]("launch")

    latest_milestone = Fact[Milestone | None]("logged")
    milestone_ranks = Fact[tuple[tuple[str, tuple[str, ...]], ...]]("logged")
    startup_timings = Fact[tuple[tuple[str, float], ...]]("logged")
    watchdog_stacks = Fact[tuple[ProcessStack, ...]]("logged")
    decode = Fact[DecodeInfo | None]("logged")
    decode_history = Fact[tuple[tuple[float, float | None, float | None], ...]]("logged")
    prefill_lines = Fact[int]("logged")
    log_health = Fact[Milestone | None]("logged")
    clues = Fact[LogClues | None]("logged")

    jit_kernels = Fact[int]("shape")
    jit_active = Fact[bool]("shape")
    jit_named = Fact[str | None]("shape")
    http_server = Fact[str | None]("shape")
    http_workers = Fact[int | None]("shape")
    pd_bootstrap = Fact[bool]("shape")
    pd_warmup = Fact[str | None]("shape")
    eplb_rebalancing = Fact[bool]("shape")
    eplb_rebalances = Fact[int]("shape")
    hf_snapshot = Fact[str | None]("shape")
    weight_cache = Fact[WeightCacheInfo | None]("shape")

    shards = Fact[BarState | None]("bars")
    draft_shards = Fact[BarState | None]("bars")
    capture = Fact[BarState | None]("bars")
    piecewise = Fact[BarState | None]("bars")
    capture_now = Fact[CaptureBar | None]("bars")
    jit = Fact[BarState | None]("bars")
    warmup_bar = Fact[BarState | None]("bars")
    weights_mem = Fact[WeightsMem | None]("bars")
    weight_files = Fact[tuple[str, int, int] | None]("bars")

    ranks = Fact[tuple[RankState, ...]]("rankset")
    tp_rank_max = Fact[int | None]("rankset")
    tp_ranks_seen = Fact[tuple[int, ...]]("rankset")
    tp_inferred = Fact[str]("rankset")
    tp_nranks = Fact[int | None]("rankset")
    tp_spans_nodes = Fact[bool]("rankset")
    pp_seen = Fact[bool]("rankset")

    health = Fact[tuple[HealthResult, ...]]("probes")
    health_checked_at = Fact[tuple[tuple[str, float], ...]]("probes")
    health_reachable = Fact[bool]("probes")
    health_ready = Fact[bool]("probes")
    health_ok_since = Fact[float | None]("probes")
    server_info = Fact[ServerInfoOutcome | None]("probes")
    startup_time = Fact[tuple[tuple[str, float], ...]]("probes")
    probe_logged_at = Fact[float | None]("probes")

    gpus = Fact[GpuSnapshot | None]("gpu")
    gpus_at = Fact[float | None]("gpu")
    gpu_history = Fact[tuple[tuple[int, tuple[float, ...]], ...]]("gpu")
    gpu_util_history = Fact[tuple[tuple[int, tuple[float | None, ...]], ...]]("gpu")
    gpu_history_at = Fact[tuple[float, ...]]("gpu")

    connection = Fact[ConnectionStatus]("link")
    connection_detail = Fact[str]("link")
    connection_since = Fact[float | None]("link")
    source_failures = Fact[tuple[tuple[str, str, float], ...]]("link")
    lost_at = Fact[float | None]("link")
    lost_by = Fact[LostBy]("link")

    process_alive = Fact[bool | None]("proc")
    process_pids = Fact[tuple[int, ...]]("proc")
    process_visible = Fact[bool]("proc")
    process_owner_uid = Fact[int | None]("proc")
    port_owner = Fact[PortOwner | None]("proc")
    activity = Fact[ActivityState | None]("proc")
    process_titled = Fact[tuple[tuple[int, str], ...]]("proc")
    process_checked_at = Fact[float | None]("proc")
    quiet_writers = Fact[tuple[int, ...]]("proc")
    quiet_log_size = Fact[int | None]("proc")

    last_control = Fact[ControlResult | None]("control")
    last_control_at = Fact[float | None]("control")

    last_progress_at = Fact[float | None]("progress")
    last_progress = Fact[str]("progress")
    last_progress_logged = Fact[bool]("progress")
    last_progress_log = Fact[str | None]("progress")
    stall = Fact[StallInfo | None]("progress")
    last_log_at = Fact[str | None]("progress")
    last_log_t = Fact[float | None]("progress")
    clock = Fact[ClockMap | None]("progress")
    reading_history = Fact[bool]("progress")
    log_skipped = Fact[int]("progress")
    log_grew_at = Fact[float | None]("progress")
    log_read_at = Fact[float | None]("progress")
    log_offset = Fact[int]("progress")
    log_file = Fact[LogFile | None]("progress")

    stall_after = Fact[float | None]("setup")
    health_probed = Fact[bool | None]("setup")
    health_port = Fact[int | None]("setup")
    log_watched = Fact[bool | None]("setup")
    process_watched = Fact[bool | None]("setup")
    launch_command = Fact[str | None]("setup")
    tried_change = Fact[TriedChange | None]("setup")
    past = Fact[Past | None]("setup")

    @classmethod
    def of(cls, **facts: Unpack[Facts]) -> Readiness:
        """A state from facts named flat (`Readiness.of(phase=…, shards=…)`): for the callers' first state
        and for tests."""
        return cls().evolve(**facts)

    def evolve(self, **facts: Unpack[Facts]) -> Readiness:
        """This state with the named facts changed: `dataclasses.replace` on each record they belong to."""
        by_record: dict[str, dict[str, object]] = {}
        top: dict[str, object] = {}
        for name, value in facts.items():
            record = _RECORD_OF.get(name)
            if record is None:
                if name not in _RECORDS:
                    raise TypeError(f"Readiness has no fact {name!r}")
                top[name] = value
            else:
                by_record.setdefault(record, {})[name] = value
        for record, changes in by_record.items():
            top[record] = _replace(top.get(record, getattr(self, record)), changes)
        return _replace(self, top)


_R = TypeVar("_R")


def _replace(record: _R, changes: dict[str, object]) -> _R:
    """`dataclasses.replace` for these records, which have no init=False fields: the constructor runs on all
    fields, without replace's per-field checks (it was two thirds of the reducer's time)."""
    return type(record)(**{**vars(record), **changes})


class Facts(TypedDict, total=False):
    """The keywords of `Readiness.evolve` and `Readiness.of`, typed: each record, and each fact by its flat name with
    the type its Fact reads (tests/test_state_facts.py holds the two to one another)."""

    launch: LaunchFacts
    server: ServerInfo
    logged: LogFacts
    shape: ShapeFacts
    bars: BarFacts
    rankset: RankFacts
    probes: HealthFacts
    gpu: GpuFacts
    link: LinkFacts
    proc: ProcessFacts
    control: ControlFacts
    progress: ProgressFacts
    setup: WatchSetup
    updated_at: float
    phase: Phase
    phase_since: float
    phase_since_log: str | None
    first_seen_at: float | None
    timeline: tuple[PhaseSpan, ...]
    launched: bool
    launches: int
    log_restart_at: float | None
    error: ErrorInfo | None
    shutdown: Milestone | None
    log_ready: bool
    log_ready_at: float | None
    log_ready_stamp: tuple[str | None, float | None]
    mid_run: MidRun | None
    launch_line: bool
    failed_log_offset: int | None
    slurm_job: SlurmJobState | None
    slurm_job_at: float | None

    latest_milestone: Milestone | None
    milestone_ranks: tuple[tuple[str, tuple[str, ...]], ...]
    startup_timings: tuple[tuple[str, float], ...]
    watchdog_stacks: tuple[ProcessStack, ...]
    decode: DecodeInfo | None
    decode_history: tuple[tuple[float, float | None, float | None], ...]
    prefill_lines: int
    log_health: Milestone | None
    clues: LogClues | None

    jit_kernels: int
    jit_active: bool
    jit_named: str | None
    http_server: str | None
    http_workers: int | None
    pd_bootstrap: bool
    pd_warmup: str | None
    eplb_rebalancing: bool
    eplb_rebalances: int
    hf_snapshot: str | None
    weight_cache: WeightCacheInfo | None

    shards: BarState | None
    draft_shards: BarState | None
    capture: BarState | None
    piecewise: BarState | None
    capture_now: CaptureBar | None
    jit: BarState | None
    warmup_bar: BarState | None
    weights_mem: WeightsMem | None
    weight_files: tuple[str, int, int] | None

    ranks: tuple[RankState, ...]
    tp_rank_max: int | None
    tp_ranks_seen: tuple[int, ...]
    tp_inferred: str
    tp_nranks: int | None
    tp_spans_nodes: bool
    pp_seen: bool

    health: tuple[HealthResult, ...]
    health_checked_at: tuple[tuple[str, float], ...]
    health_reachable: bool
    health_ready: bool
    health_ok_since: float | None
    server_info: ServerInfoOutcome | None
    startup_time: tuple[tuple[str, float], ...]
    probe_logged_at: float | None

    gpus: GpuSnapshot | None
    gpus_at: float | None
    gpu_history: tuple[tuple[int, tuple[float, ...]], ...]
    gpu_util_history: tuple[tuple[int, tuple[float | None, ...]], ...]
    gpu_history_at: tuple[float, ...]

    connection: ConnectionStatus
    connection_detail: str
    connection_since: float | None
    source_failures: tuple[tuple[str, str, float], ...]
    lost_at: float | None
    lost_by: LostBy

    process_alive: bool | None
    process_pids: tuple[int, ...]
    process_visible: bool
    process_owner_uid: int | None
    port_owner: PortOwner | None
    activity: ActivityState | None
    process_titled: tuple[tuple[int, str], ...]
    process_checked_at: float | None
    quiet_writers: tuple[int, ...]
    quiet_log_size: int | None

    last_control: ControlResult | None
    last_control_at: float | None

    last_progress_at: float | None
    last_progress: str
    last_progress_logged: bool
    last_progress_log: str | None
    stall: StallInfo | None
    last_log_at: str | None
    last_log_t: float | None
    clock: ClockMap | None
    reading_history: bool
    log_skipped: int
    log_grew_at: float | None
    log_read_at: float | None
    log_offset: int
    log_file: LogFile | None

    stall_after: float | None
    health_probed: bool | None
    health_port: int | None
    log_watched: bool | None
    process_watched: bool | None
    launch_command: str | None
    tried_change: TriedChange | None
    past: Past | None


_RECORDS = frozenset(f.name for f in fields(Readiness))
_RECORD_OF = {name: d.record for name, d in vars(Readiness).items() if isinstance(d, Fact)}
