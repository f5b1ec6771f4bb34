"""Startup and serving lines beyond the classic milestones, read from SGLang 0.5.14 … 0.5.23's format strings.

Each function reads one message (the text after the envelope) and returns (kind, fields) or None; order is the
parser's business. The kinds (all `Milestone.kind`):

- dist_init: distributed init on its way (`[Gloo] Rank 0 is connected to …`, `sglang is using nccl==2.27.3`,
  `Launch DP1 starting at GPU #4.`).
- kv_profile: the KV budget being profiled after the weights (`max_total_tokens=… is larger than the profiled
  value …`, `Post-capture KV sizing: …`).
- jit_begin / jit_kernel / jit_end: DeepGEMM JIT (`Entering DeepGEMM JIT Pre-Compile session. …`, one
  `Try DeepGEMM JIT Compiling for <KIND> N=…, K=…, num_groups=… with all Ms.` per kernel shape,
  `PP-parallel DeepGEMM warmup start/done …`); the `DeepGEMM warmup` bar is a BarProgress "jit".
- hf_snapshot: `Found local HF snapshot for M at P; skipping download.` (field local=True); `Local snapshot
  incomplete for M: …. Will download missing files.`, `Local HF snapshot at P has no files matching …; will attempt
  download.` and huggingface_hub's `Fetching N files` (local=False: a download, which SGLang runs silently).
- weight_cache: the weight cache daemon. `Launching N weight cache daemon(s) …` is the engine starting its own
  (co-terminal with it); `Launched weight cache daemon gpu=… pp_rank=… tp_rank=… pid=…` and `All N weight cache
  daemons on node K are ready` are the standalone launcher's (`python -m sglang.srt.weight_cache.daemon`), whose
  daemons outlive the server and keep their GPU memory; `[IpcModelLoader] Loaded model via IPC (mode=client)` is a
  server using such a daemon; `[WeightCacheDaemon gpu=…] …` are the daemons' own lines.
- pd_bootstrap, pd_warmup_begin, pd_warmup_end (field ok): PD disaggregation.
- http_running: an HTTP server other than plain uvicorn is up (`SGLANG_RUST_SERVER enabled, Rust server listen
  on …`, `Starting embedded Granian HTTP/2 server on …`); `Uvicorn running on H:P with N SO_REUSEPORT workers`
  is uvicorn_running with a workers field.
- warmups_begin / warmups_end: `--warmups` (`Running warmup NAME`, `Warmup ended`).
- eplb_begin / eplb_end: `[EPLBManager] rebalance start|end`: a transient state while serving, not a failure.

Lines that place a window of the log (one that starts mid-run) in a phase, read from 0.4.6 … 0.5.23's sources:

- dist_init also: `Found nccl from …` (pynccl_wrapper.py), `reading|generating GPU P2P access cache …`
  (custom_all_reduce_utils.py), `Custom allreduce is disabled …` / `Setup Custom allreduce failed …`
  (custom_all_reduce.py; field spans_nodes when `this process group spans across nodes`: the TP group spans nodes).
- load_step: `Using model weights format […]`, `Loading|Loaded weights from remote storage` (weight_utils.py,
  loader.py), ModelExpress's `RDMA transfer complete: 2944 tensors, 165.72 GB, 6.064s, 218.6 Gbps` (2026; a load
  with no shard bar): the weights are loading.
- kernel_autotune: `Running FlashInfer autotune …` / `FlashInfer autotune completed.` (runner/flashinfer_autotune.py,
  0.5.x): after the KV cache, before capture.
- graph_step: `Capture cuda graph bs […]` (cuda_graph_runner.py ≤ 0.5.9) and `Registering N cuda graph addresses`
  (custom_all_reduce.py, after a capture): inside capture.
- compile_autotune: Inductor's `AUTOTUNE mm(16x7168, 7168x2112)` and `SingleProcess AUTOTUNE benchmarking takes …`
  (torch/_inductor/select_algorithm.py, written to stderr): torch.compile under `--enable-torch-compile`, which
  SGLang runs inside capture.
- retract: `KV cache pool is full. Retract requests. …` (scheduler.py; 0.4.6: `Decode out of memory happened. …`):
  requests are being served.
- request_log: `Receive: obj=…` / `Finish: obj=…` (`--log-requests`: tokenizer_manager.py, 0.5.23
  utils/request_logger.py): HTTP is up (the warmup's own request is logged too).
"""

from __future__ import annotations

import re

from tui.core.lazyre import lazy
from tui.core.vocab import MilestoneKind

Fields = tuple[tuple[str, object], ...]

_JIT_KERNEL = lazy(r"Try DeepGEMM JIT Compiling for <(\w+)> N=(\d+), K=(\d+)(?:, num_groups=(\d+))?", re.ASCII)
_DAEMON_LAUNCHED = lazy(r"Launched weight cache daemon gpu=(\d+) pp_rank=(\d+) tp_rank=(\d+) pid=(\d+)", re.ASCII)
_DAEMON_PID = lazy(r"\b(?:pid=|\(pid=)(\d{1,10})", re.ASCII)
_LAUNCHING_DAEMONS = lazy(r"Launching (\d+) weight cache daemon", re.ASCII)
_IPC_MODE = lazy(r"mode=(\w+)", re.ASCII)
_REUSEPORT = lazy(r"Uvicorn running on (\S+) with (\d+) SO_REUSEPORT workers", re.ASCII)
_RUST = lazy(r"Rust server listen on (\S+)", re.ASCII)
_GRANIAN = lazy(r"Granian HTTP/2 server on (\S+)", re.ASCII)
_BOOTSTRAP = lazy(r"BootstrapServer started(?: successfully)? on (\S+)", re.ASCII)
_WARMUP_NAME = lazy(r"Running warmup (\S+)", re.ASCII)
_EPLB_TIME = lazy(r"time=(\d+(?:\.\d+)?)s", re.ASCII)
# Lines between the weights and the KV pool: the KV budget is being profiled and the pools allocated.
_KV_PROFILE = ("Post-capture KV sizing", "Using KV cache dtype", "Mamba Cache is allocated", "KV Cache skipped",
               "Use Sliding window memory pool", "SWA ring:", "Tree cache initialized",
               "Max concurrent requests (per dp worker) from the finalized token capacity")  # fmt: skip
# Newer KV sizing lines whose wording varies by model (DeepSeek-V4's pools, hybrid SWA/SSM models): a pool being
# built (`Initialize DeepSeekV4TokenToKVPool with max_num_reqs=256 swa_size=…`), the memory calculation behind the
# KV budget (`DeepSeekV4 memory calculation: …`, `KV cache memory calculation …`), the hybrid split
# (`Hybrid KV cache: full=… swa=…`, `Mamba state size: …`).
_KV_SIZING = lazy(
    r"Initiali[sz](?:e|ing) \w*(?:KV|Kv|Token|Mamba|SWA|Swa|State|Cache)\w*Pool\b"
    r"|^[\w./ -]{0,40}\b(?:[Mm]emory|KV|kv) (?:[Cc]alculation|[Cc]alc|[Bb]udget|sizing)\b"
    r"|^(?:Hybrid|hybrid) (?:KV|kv|SWA|swa|SSM|ssm|[Mm]amba|linear)\b[^:]{0,40}(?:cache|pool|size|memory|ratio)"
    r"|^(?:[Mm]amba|SSM|ssm) (?:state|cache|pool)s? (?:size|memory|is allocated)",
    re.ASCII,
)
_LAUNCH_DP = lazy(r"Launch DP(\d+) starting at GPU #(\d+)", re.ASCII)
# Lines of the distributed set-up (communicators, custom all-reduce): the ranks are initialising.
_DIST_STEPS = ("Found nccl from", "reading GPU P2P access cache", "generating GPU P2P access cache",
               "Custom allreduce is disabled", "Custom quick allreduce is disabled", "CustomAllreduce is disabled",
               "CustomAllReduceV2 is disabled", "Setup Custom allreduce failed", "Setup Custom quick allreduce failed")  # fmt: skip
SPANS_NODES = "process group spans across nodes"
_LOAD_STEPS = (
    "Using model weights format",
    "Loading weights from remote storage",
    "Loaded weights from remote storage",
    "RDMA transfer complete",  # ModelExpress peer-to-peer load (sglang#24723): no shard bar at all
    "[ModelExpress]",
)
_NRANKS = lazy(r"\bn[Rr]anks (\d{1,6})\b", re.ASCII)


def shape(msg: str) -> tuple[MilestoneKind, Fields] | None:
    """(kind, fields) for the lines listed in the module docstring, else None."""
    first = msg[:1]
    if first == "[":
        return _bracketed(msg)
    if "AUTOTUNE " in msg[:40] and (msg.startswith("AUTOTUNE ") or "AUTOTUNE benchmarking takes" in msg):
        return "compile_autotune", ()
    found = _steps(msg)
    if found is not None:
        return found
    if first == "T" and msg.startswith("Try DeepGEMM JIT Compiling"):
        m = _JIT_KERNEL.match(msg)
        if m:
            fields: list[tuple[str, object]] = [("kernel", m.group(1)), ("n", int(m.group(2))), ("k", int(m.group(3)))]
            if m.group(4):
                fields.append(("num_groups", int(m.group(4))))
            return "jit_kernel", tuple(fields)
        return "jit_kernel", ()
    if msg.startswith("Entering DeepGEMM JIT Pre-Compile session"):
        return "jit_begin", ()
    if "DeepGEMM warmup" in msg and msg.startswith("PP-parallel DeepGEMM warmup"):
        return ("jit_end", ()) if " done" in msg else ("jit_begin", ())
    if msg.startswith("sglang is using nccl=="):
        return "dist_init", (("nccl", msg[len("sglang is using nccl==") :].strip()),)
    if msg.startswith("Launch DP") and " starting at GPU" in msg:
        m = _LAUNCH_DP.match(msg)
        return "dist_init", (("dp_rank", int(m.group(1))), ("gpu", int(m.group(2)))) if m else ()
    if "is larger than the profiled value" in msg or msg.startswith(_KV_PROFILE) or "of the KV budget" in msg:
        return "kv_profile", _tree_cache(msg)
    if ("ool" in msg or "alc" in msg or "udget" in msg or "izing" in msg or "ybrid" in msg or "state" in msg
            or "ache" in msg) and _KV_SIZING.search(msg):  # fmt: skip
        return "kv_profile", (("worded", True),)  # read by its words, not a known line: the parser weighs it
    if msg.startswith("Found local HF snapshot for"):
        return "hf_snapshot", (("local", True),)
    if msg.startswith(("Local snapshot incomplete for", "Local HF snapshot at")) and "download" in msg:
        return "hf_snapshot", (("local", False),)  # `… Will download missing files.` / `…; will attempt download.`
    if msg.startswith(("Downloading ", "Fetching ")) and " files" in msg[:40]:
        return "hf_snapshot", (("local", False), ("hub", True))  # huggingface_hub's own: any process may print it
    return _servers(msg) or _daemons(msg)


def _steps(msg: str) -> tuple[MilestoneKind, Fields] | None:
    """The set-up steps between the milestones (module docstring, second list)."""
    if msg.startswith(_DIST_STEPS):
        return "dist_init", (("spans_nodes", True),) if SPANS_NODES in msg else ()
    if msg.startswith(_LOAD_STEPS):
        return "load_step", ()
    if msg.startswith(("Running FlashInfer autotune", "FlashInfer autotune completed")):
        return "kernel_autotune", ()
    if msg.startswith("Capture cuda graph bs ") or (msg.startswith("Registering ") and "cuda graph addresses" in msg):
        return "graph_step", ()
    if msg.startswith(("KV cache pool is full. Retract requests", "Decode out of memory happened")):
        return "retract", ()
    if msg.startswith(("Receive: obj=", "Finish: obj=")):
        return "request_log", ()
    return None


def _tree_cache(msg: str) -> Fields:
    """`Tree cache initialized: source=default impl=UnifiedRadixCache hybrid_swa=True …` (2026): the prefix cache,
    built right after the KV pool; its implementation is a field."""
    if not msg.startswith("Tree cache initialized"):
        return ()
    m = _TREE_IMPL.search(msg)
    return (("tree_cache", m.group(1)),) if m else ()


_TREE_IMPL = lazy(r"\bimpl=(\w+)", re.ASCII)


def nccl_ranks(msg: str) -> int | None:
    """The size of the communicator an NCCL INFO line names (`comm 0x… rank 3 nranks 16 cudaDev 3 … - Init
    COMPLETE`, `comm 0x… rank 0 nRanks 16 nNodes 2 localRanks 8 …`; NCCL's init.cc), else None."""
    m = _NRANKS.search(msg)
    return int(m.group(1)) if m else None


def _bracketed(msg: str) -> tuple[MilestoneKind, Fields] | None:
    if msg.startswith("[Gloo] Rank"):
        return "dist_init", ()
    if msg.startswith("[EPLBManager] rebalance "):
        rest = msg[len("[EPLBManager] rebalance ") :]
        if rest.startswith("start"):
            return "eplb_begin", ()
        if rest.startswith("end"):
            t = _EPLB_TIME.search(rest)
            return "eplb_end", (("elapsed_s", float(t.group(1))),) if t else ()
        return None
    if msg.startswith(("[WeightCacheDaemon", "[IpcModelLoader]")):
        return _daemons(msg)
    if msg.startswith("[ModelExpress]"):
        return "load_step", ()
    return None


def _servers(msg: str) -> tuple[MilestoneKind, Fields] | None:
    if msg.startswith("Uvicorn running on") and "SO_REUSEPORT" in msg:
        m = _REUSEPORT.match(msg)
        if m:
            return "uvicorn_running", (("url", m.group(1)), ("workers", int(m.group(2))))
    if msg.startswith("SGLANG_RUST_SERVER enabled"):
        m = _RUST.search(msg)
        return "http_running", (("server", "rust"),) + ((("url", m.group(1)),) if m else ())
    if msg.startswith("Starting embedded Granian"):
        m = _GRANIAN.search(msg)
        return "http_running", (("server", "granian"),) + ((("url", m.group(1)),) if m else ())
    if "BootstrapServer started" in msg:
        m = _BOOTSTRAP.search(msg)
        return "pd_bootstrap", (("url", m.group(1)),) if m else ()
    if msg.startswith("Start of pd disaggregation warmup"):
        return "pd_warmup_begin", ()
    if msg.startswith("End of disaggregation warmup") or msg.startswith("Disaggregation warmup requests completed"):
        return "pd_warmup_end", (("ok", True),)
    if msg.startswith("Disaggregation warmup failed"):
        return "pd_warmup_end", (("ok", False),)
    if msg.startswith("Running warmup "):
        m = _WARMUP_NAME.match(msg)
        return "warmups_begin", (("name", m.group(1)),) if m else ()
    if msg.startswith("Warmup ended"):
        return "warmups_end", ()
    return None


def _daemons(msg: str) -> tuple[MilestoneKind, Fields] | None:
    """The weight cache daemon: fields role (launching | launched | daemon | client), pid, standalone."""
    if "eight cache daemon" not in msg and not msg.startswith(("[WeightCacheDaemon", "[IpcModelLoader]")):
        return None
    if msg.startswith("Launching ") and "weight cache daemon" in msg:
        m = _LAUNCHING_DAEMONS.match(msg)
        return "weight_cache", (("role", "launching"), ("standalone", False)) + (
            (("count", int(m.group(1))),) if m else ()
        )
    if msg.startswith("Launched weight cache daemon"):  # the standalone launcher's line (the engine says "Launching")
        m = _DAEMON_LAUNCHED.match(msg)
        if m:
            return "weight_cache", (("role", "launched"), ("gpu", int(m.group(1))), ("tp_rank", int(m.group(3))),
                                    ("pid", int(m.group(4))), ("standalone", True))  # fmt: skip
        return "weight_cache", (("role", "launched"), ("standalone", True))
    if msg.startswith("[WeightCacheDaemon"):
        return "weight_cache", (("role", "daemon"),)
    if msg.startswith("[IpcModelLoader]"):
        fields: list[tuple[str, object]] = [("role", "client")]
        mode = _IPC_MODE.search(msg)
        if mode:
            fields.append(("mode", mode.group(1)))
            if mode.group(1) == "client":  # --weight-cache-mode client: the daemon was started on its own
                fields.append(("standalone", True))
        if "liveness watchdog for pid" in msg or "Weight cache daemon (pid=" in msg:
            pid = _DAEMON_PID.search(msg)
            if pid:
                fields.append(("pid", int(pid.group(1))))
        return "weight_cache", tuple(fields)
    if msg.startswith(("All ", "Weight cache daemon pp_rank")) and "ready" in msg:
        return "weight_cache", (("role", "ready"),)
    return None
