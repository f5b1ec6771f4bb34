"""Events: the only things that flow from sources (and the log parser) into the readiness reducer.

Every event is a frozen dataclass. Log-derived events carry `at` (the timestamp text as the log printed
it, or None) and `t` (that timestamp as float seconds, naive local time read as if UTC, or None when the
line had none). Source events carry no log time; the reducer stamps them with its `now`.

This module is a contract shared by the parser, the reducer, the sources and the UI: add fields with
defaults, never rename or remove.
"""

from __future__ import annotations

from typing import Union

from tui.core.record import Record, record
from tui.core.vocab import (
    BarName,
    BatchStage,
    ConnectionStatus,
    ControlAction,
    ErrorKind,
    GpuSource,
    HealthOutcome,
    LogResetReason,
    MilestoneKind,
    ServerInfoOutcome,
)

# ---------------------------------------------------------------------------------------------- log events


@record
class ServerArgs(Record):
    """The `server_args=` line (repr or dict form): what was launched."""

    model: str | None = None
    tp_size: int | None = None
    dp_size: int | None = None
    pp_size: int | None = None
    speculative: str | None = None  # "EAGLE3", "EAGLE", "NEXTN", "STANDALONE", … or None
    draft_model: str | None = None
    port: int | None = None
    host: str | None = None
    at: str | None = None
    t: float | None = None
    # more of the launch's key (issue 9 history); None when the line does not say
    ep_size: int | None = None
    nnodes: int | None = None
    load_format: str | None = None
    quantization: str | None = None
    args_hash: str | None = None  # tui.core.launchkey.args_hash of the line
    version: str | None = None  # SGLang's version, when a line before server_args printed it (`sglang version`)
    # a launch command or a script's print of the arguments (tui.core.logcommand), not SGLang's `server_args=`: the
    # sizes it states, but no launch in view (a window of the log pasted under its command may start mid-run)
    stated_only: bool = False


@record
class Milestone(Record):
    """One per-rank (or main-process) startup milestone.

    kind is one of:
      init_begin, init_end, mem_baseline, load_begin, load_end, kv_alloc, mem_pool_end,
      graph_begin, graph_end, max_tokens, startup_timings, uvicorn_started, app_startup_complete,
      uvicorn_running, warmup_request, fired_up, unbalanced_memory, load_straggler,
      and from SGLang 0.5.14 … 0.5.23 (tui.core.logshapes): dist_init, kv_profile, jit_begin, jit_kernel,
      jit_end, hf_snapshot, weight_cache, pd_bootstrap, pd_warmup_begin, pd_warmup_end, http_running,
      warmups_begin, warmups_end, eplb_begin, eplb_end
      shutdown (SGLang's "SIGTERM received…" or uvicorn's "Shutting down": a signal asked it to stop)
    rank is the rank label as printed ("TP0", "DP1 TP3", "PP1 TP2", …) or None for the main process /
    TP=1; draft is True when the milestone belongs to the speculative draft model. fields holds the
    numbers the line carries, e.g. {"avail_mem_gb": 20.1, "mem_usage_gb": 16.5, "elapsed_s": 94.3,
    "tokens": 2490368, "bs": [1, 2, 4], "what": "decode"}.
    """

    kind: MilestoneKind
    rank: str | None = None
    draft: bool = False
    fields: tuple[tuple[str, object], ...] = ()
    line: str = ""
    at: str | None = None
    t: float | None = None

    def get(self, key: str, default: object = None) -> object:
        for k, v in self.fields:
            if k == key:
                return v
        return default


@record
class BarProgress(Record):
    """A tqdm frame: bar is "weights" (main model shards), "draft_weights", "capture" (CUDA graph batches),
    "piecewise" (piecewise CUDA graph: `Compiling num tokens` / `Capturing num tokens`), "jit" (`DeepGEMM warmup`)
    or "warmup" (`Warmup prefill shapes`, `Profiling prefill latency for dynamic chunking`)."""

    bar: BarName
    done: int
    total: int
    rank: str | None = None
    bs: int | None = None  # capture bars: the batch size being captured
    avail_mem_gb: float | None = None  # capture bars: avail_mem in the description
    label: str = ""  # the bar's description as printed, e.g. "Multi-thread loading shards"
    at: str | None = None
    t: float | None = None
    elapsed_s: float | None = None  # tqdm's own elapsed time in the frame ("[01:32<…") — bars carry no log time
    remaining_s: float | None = None  # tqdm's own remaining-time estimate, None when it printed "?"


@record
class Failure(Record):
    """A line that states why the server failed (or a generic failure marker).

    kind: oom | nccl | port_in_use | model_not_found | exception | other.
    root_cause is True for the line that states the cause (the exception or OOM line), False for generic
    markers (`Received sigquit…`, `Exception in run_tp_server:`, `Initialization failed.`); the reducer
    keeps the strongest line it has seen.
    """

    kind: ErrorKind
    line: str
    root_cause: bool = True
    rank: str | None = None
    at: str | None = None
    t: float | None = None


@record
class BatchStats(Record):
    """A `Prefill batch` / `Decode batch` line after startup."""

    stage: BatchStage
    gen_throughput: float | None = None
    accept_len: float | None = None
    accept_rate: float | None = None
    running_req: int | None = None
    queue_req: int | None = None
    token_usage: float | None = None
    rank: str | None = None
    at: str | None = None
    t: float | None = None
    count: int = 1  # how many batch lines of this stage this event stands for (the values are the last one's)


@record
class SpeculativeHint(Record):
    """A line that shows speculative decoding is on without naming it in server_args
    (e.g. `Overlap scheduler is disabled because of using eagle speculative decoding.`)."""

    algorithm: str | None = None  # "EAGLE" when the line names a family, None when unknown
    line: str = ""
    at: str | None = None
    t: float | None = None


@record
class LaunchStarted(Record):
    """A new launch begins in the same log (a second `server_args=` after one was already seen is reported
    by the parser as LaunchStarted followed by ServerArgs). The reducer resets to a fresh startup."""

    at: str | None = None
    t: float | None = None


@record
class RankSeen(Record):
    """A rank label appeared for the first time in this launch: an SGLang rank prefix ("TP3", "DP1 TP3 EP3")
    or a PyTorch `[rank7]:` line prefix ("rank7"). tp_rank is its TP index (a torch rank counts as one), so
    the TP size can be inferred (max + 1, when above 1) from logs that hold no `server_args=` line."""

    rank: str
    tp_rank: int | None = None
    at: str | None = None
    t: float | None = None


@record
class WatchdogDump(Record):
    """SGLang's own py-spy dump in the log (`Pyspy dump for PID N (py-spy dump … --pid N):` and the
    unprefixed py-spy text under it, printed by its watchdog or crash diagnostics; issue 13). rank is the log
    prefix's rank (None when the main process dumped the schedulers); text is py-spy's output as printed."""

    pid: int
    text: str = ""
    rank: str | None = None
    at: str | None = None
    t: float | None = None


@record
class JitHint(Record):
    """A line that names a JIT compiling kernels (`Entering DeepGEMM JIT Pre-Compile session…`, `Try DeepGEMM
    JIT Compiling for …`, FlashInfer's `flashinfer.jit` lines): what the compiler processes are for (issue 13).
    Reported once per kind and launch."""

    kind: str  # "DeepGEMM" | "FlashInfer"
    line: str = ""
    at: str | None = None
    t: float | None = None


# ------------------------------------------------------------------------------------------- source events


@record
class LogActivity(Record):
    """The tail delivered bytes. offset: total bytes consumed of the current file after this chunk (a
    progress signal for the reducer); data: the raw bytes (for the log pane; the reducer ignores them)."""

    offset: int
    data: bytes = b""


@record
class LogReset(Record):
    """The log file was truncated, rotated (new inode) or appeared/disappeared. reason: truncated |
    rotated | missing | appeared | started_at_last_launch | skipped (a large log: the bytes between the launch's
    first lines and the log's last ones were not read; what follows begins mid-stream)."""

    reason: LogResetReason
    detail: str = ""
    skipped: int = 0  # skipped: how many bytes were not read


@record
class LogLook(Record):
    """The log tail's look at the file when it (re)starts reading it (tui.core.clocks decides what it means).

    end: the file's size at the look: the bytes before it were written before we read them (history).
    mtime_s: the file's mtime (the host's epoch): the last of them was written then. skew_s: our clock - the
    host's. last_t: the newest log time in the file's last bytes at the look (None: none of them had one).
    live: False while the events of those bytes follow; the same look again with True once the tail has read
    them (from here, read as written). A look with nothing to read comes once, live."""

    end: int
    mtime_s: float | None = None
    skew_s: float | None = None
    last_t: float | None = None
    live: bool = False


@record
class GpuProcess(Record):
    pid: int
    used_bytes: int | None = None
    name: str = ""  # process title / name, e.g. "sglang::scheduler_TP3"


@record
class GpuInfo(Record):
    """One GPU in one probe tick. None means N/A (never 0)."""

    index: int
    uuid: str = ""
    name: str = ""
    used_bytes: int | None = None
    total_bytes: int | None = None
    reserved_bytes: int | None = None
    util_pct: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    procs: tuple[GpuProcess, ...] = ()
    node: str = ""  # a deployment's member this GPU belongs to ("" on one host); index is then global


@record
class GpuSnapshot(Record):
    """One probe tick. source: nvml | nvidia-smi | sim. error set when the probe could not read GPUs."""

    source: GpuSource
    gpus: tuple[GpuInfo, ...] = ()
    error: str | None = None
    t: float | None = None  # the probe's own clock (host time)


@record
class HealthResult(Record):
    """One HTTP probe of the server.

    outcome: refused (nothing listens / tunnel to closed port) | starting (503) | ok (2xx) |
             http_error (other status) | timeout | garbage (not HTTP, or not the expected body) | error
    """

    endpoint: str  # "/health", "/v1/models", "/model_info", "/get_server_info"
    outcome: HealthOutcome
    status: int | None = None
    latency_s: float | None = None
    detail: str = ""
    # The identity probe (/model_info, /get_model_info): the model_path SGLang's answer names; None when the
    # answer was not SGLang's (outcome garbage) or the probe is another endpoint.
    model_path: str | None = None


@record
class ServerInfoAnswer(Record):
    """The one `/server_info` (`/get_server_info` in 0.4.x) read when /health first says 200 (issue 9).

    outcome: ok (a JSON object) | any HealthResult outcome otherwise. version: its `version`; startup_time:
    SGLang 0.5.23's `startup_time` flattened ("load_weight", "kv_cache_allocation", "scheduler_e2e",
    "tokenizer_e2e", "cuda_graph.<phase>", "cuda_graph_total"), empty before 0.5.23.
    """

    endpoint: str
    outcome: ServerInfoOutcome
    version: str | None = None
    startup_time: tuple[tuple[str, float], ...] = ()
    model_path: str | None = None
    detail: str = ""


@record
class ConnectionState(Record):
    """The link to the host. state: connecting | connected | reconnecting | failed (final: auth / host key)."""

    state: ConnectionStatus
    detail: str = ""


@record
class ProcCounters(Record):
    """One process of the server in one activity sample: its counters since it started (from /proc)."""

    pid: int
    ppid: int = 0
    name: str = ""  # its title from the scans (`sglang::scheduler_TP3`), else the kernel's short name
    cpu_s: float | None = None  # utime + stime
    read_bytes: int | None = None  # /proc/PID/io read_bytes (None: not readable)
    state: str = ""  # the kernel's state letter (R, S, D, T…; "" when the watch did not send it)
    rss_bytes: int | None = None  # resident memory (/proc/PID/stat rss × page size)


@record
class CompilerProc(Record):
    """A compiler (nvcc, cicc, ptxas, ninja, cc1plus, gcc/c++) or a Python compile worker under the server."""

    pid: int
    ppid: int = 0
    name: str = ""  # the kernel's short name, e.g. "nvcc"
    cmd: str = ""  # the head of its command line


@record
class HostActivity(Record):
    """What the host shows of the server beyond its log, in one sample of the process watch (issue 13):
    per-process CPU and disk reads, compiler processes in its tree, and the HF cache's `*.incomplete` blobs.
    download_bytes is None when no `*.incomplete` blob exists; cache_dir is the hub cache looked at."""

    procs: tuple[ProcCounters, ...] = ()
    compilers: tuple[CompilerProc, ...] = ()
    download_bytes: int | None = None
    download_files: int = 0
    cache_dir: str = ""


@record
class ServerProcess(Record):
    """What the host says about the server's processes (from the control channel or the probe).

    alive is False when the server's main process (and every process of its group/session) is gone; None when
    the watch cannot tell (unknown, never dead).
    """

    alive: bool | None
    pids: tuple[int, ...] = ()
    detail: str = ""
    # False: the server's processes cannot be seen (another uid's /proc/PID/fd): alive=False then means
    # "not found", never "gone". owner_uid: the uid that owns what was seen of it (its port's socket, its log).
    visible: bool = True
    owner_uid: int | None = None
    activity: HostActivity | None = None  # the watch's activity sample taken with this check, when it took one
    # (pid, title) of the live processes that carry an SGLang title (`sglang::scheduler_TP3`): one that was seen
    # and is gone while the server lives is a rank that died (tui.core.fold_sources).
    titled: tuple[tuple[int, str], ...] = ()
    # live writers of the log that had written nothing to it when the server was found (their open file's
    # position was 0), and the log's size then: a launch that holds the log open and had not printed its first
    # line; every byte before that size is someone else's.
    quiet_writers: tuple[int, ...] = ()
    quiet_log_size: int | None = None
    # the server's main process (the launcher: HTTP, tokenizer) as found, when it is gone while others of the server
    # live: SGLANG_EARLY_FORKSERVER's ranks outlive it by a second, then exit by themselves (tui.core.fold_sources)
    main_gone: int | None = None


@record
class ControlResult(Record):
    """The outcome of an intent (restart, terminate, kill, stop): shown, never assumed."""

    action: ControlAction
    ok: bool
    detail: str = ""
    command: str = ""
    survivors: tuple[int, ...] = ()  # PIDs of the server still alive afterwards
    gpu_held: tuple[tuple[int, int, int], ...] = ()  # (gpu index, pid, bytes) still held by its processes
    found: str = ""  # a stop that found nothing to act on: "nothing" (no server) | "cannot_see"; "" otherwise


@record
class PortOwner(Record):
    """Who listens on the server's port, from the host's /proc (the process watch)."""

    port: int
    pid: int | None = None  # None: nobody listens, or the listener cannot be seen
    command: str = ""  # its command line, when readable
    ours: bool | None = None  # the listener is one of the server's processes; None: cannot tell
    forwarder: str = ""  # the listener is a known transparent forwarder (docker-proxy, socat, ssh): its name
    earlier: bool = False  # the listener is an earlier launch that still writes the same log, not its latest


@record
class LogFile(Record):
    """What the log path is, from the log tail's look at it: named in the verdict when it is not a plain
    readable file the server writes. status: ok | empty | missing | directory | permission_denied |
    rotated_following (the server writes the file now at `target`) | deleted_following (the server writes
    a deleted file; `target` is its /proc/PID/fd/N). symlink: where the path points, when it is a link."""

    status: str
    path: str
    target: str = ""
    pid: int | None = None  # the server process whose stdout/stderr is followed
    symlink: str | None = None


@record
class SourceFailed(Record):
    """A source's worker crashed (a bug or an unexpected answer) and is being started again.

    source: log | health | gpus | processes | ticks — the one source it is about; it says nothing of any other
    source's fact (a crashed process watch is not a /health error).
    """

    source: str
    message: str  # "ExceptionType: what it said"


@record
class ProbeLogged(Record):
    """One of sglang-tui's own requests (`?from=sglang-tui`) as the server's log shows it, in its access line: the
    requests that reach this server are logged by it, so a listener on the port that is not one of its processes
    but whose relayed requests land here is a forwarder in front of it (tui.core.answerer)."""

    endpoint: str  # the path without the query ("/health", "/model_info")
    status: int | None = None


@record
class Tick(Record):
    """Time passes: lets the reducer re-evaluate the stall rule with no other event."""


@record
class WeightFiles(Record):
    """The model's safetensors files on the host, by `stat` (issue 9: the weights' bytes, for the byte ETA).

    total_bytes None: none found (not a local directory, nothing in the HF cache). model: the model path asked.
    """

    model: str
    total_bytes: int | None = None
    files: int = 0


@record
class SlurmJobState(Record):
    """The Slurm job the server runs in, as one squeue call said this cycle (tui/sources/slurm.py): its state
    word (PENDING, RUNNING, CANCELLED, …, or GONE once Slurm no longer knows it), why it waits, how long it has
    been in the queue and when Slurm expects it to start (seconds, on the Slurm host's own clock at the look),
    and whether sglang-tui cancelled it (`stop` marks the job before its scancel)."""

    job_id: str
    state: str
    reason: str = ""
    queued_s: float | None = None  # seconds since the (latest) submit, when pending
    starts_in_s: float | None = None  # Slurm's expected start, seconds from the look (pending, when it gives one)
    nodes: str = ""
    ours: bool = False  # cancelled by sglang-tui (its mark on the job)
    restarts: int = 0


@record
class LogClues(Record):
    """What a remedy reads in the log (tui/core/remedy.py), read by tui/core/remedy_clues.ClueReader: this launch's
    `server_args=` text, SGLang's own printed suggestion (`Possible solutions:` and its numbered lines), the cache
    directories a failed build names, the batch size the CUDA graph capture began with (its largest). A snapshot:
    each replaces the last, and a new launch starts with none."""

    args_line: str = ""
    advice: tuple[str, ...] = ()
    cache_dirs: tuple[str, ...] = ()
    capture_bs: int | None = None


Event = Union[  # noqa: UP007  (one member a line: a new event is a one-line addition)
    ServerArgs,
    Milestone,
    BarProgress,
    Failure,
    BatchStats,
    SpeculativeHint,
    LaunchStarted,
    RankSeen,
    LogActivity,
    LogReset,
    LogLook,
    GpuSnapshot,
    HealthResult,
    ServerInfoAnswer,
    ConnectionState,
    ServerProcess,
    ControlResult,
    SourceFailed,
    PortOwner,
    LogFile,
    ProbeLogged,
    Tick,
    HostActivity,
    WatchdogDump,
    JitHint,
    WeightFiles,
    SlurmJobState,
    LogClues,
]

__all__ = [
    "LogClues",
    "BarProgress",
    "BatchStats",
    "CompilerProc",
    "ConnectionState",
    "ControlResult",
    "Event",
    "Failure",
    "GpuInfo",
    "GpuProcess",
    "GpuSnapshot",
    "HealthResult",
    "HostActivity",
    "JitHint",
    "LaunchStarted",
    "LogActivity",
    "LogLook",
    "LogFile",
    "LogReset",
    "Milestone",
    "PortOwner",
    "ProbeLogged",
    "ProcCounters",
    "RankSeen",
    "ServerArgs",
    "ServerInfoAnswer",
    "ServerProcess",
    "SlurmJobState",
    "SourceFailed",
    "SpeculativeHint",
    "Tick",
    "WatchdogDump",
    "WeightFiles",
]
