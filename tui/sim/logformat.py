"""SGLang log lines as each supported version prints them (envelope, milestones, runtime lines).

Texts follow the format strings in shared/reference/sglang-startup.md; VERSIONS lists the supported spellings.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

V059 = "0.5.9"
V0523 = "0.5.23"
VMAIN = "main"  # SGLang's main branch through 2026-10 (sglang-startup.md §12): 0.5.23's lines and the newest shapes
VERSIONS = (V059, V0523, VMAIN)


def stamp(t: float) -> str:
    """SGLang's datefmt: naive local time, seconds resolution."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def restamp(text: str, t: float) -> str:
    """The same line with its `[YYYY-MM-DD HH:MM:SS` timestamp replaced by t's (text without one is unchanged)."""
    if len(text) > 20 and text[0] == "[" and text[5] == "-" and text[14] == ":":
        return "[" + stamp(t) + text[20:]
    return text


def gb(x: float) -> str:
    return f"{x:.2f}"


class LogFormat:
    """Renders lines for one SGLang version; every method returns complete text ending in a newline."""

    def __init__(self, version: str, tp: int) -> None:
        if version not in VERSIONS:
            raise ValueError(f"unknown log format {version!r}: use one of {', '.join(VERSIONS)}")
        self.version = version
        self.new = version in (V0523, VMAIN)
        self.main = version == VMAIN
        self.tp = tp

    # ------------------------------------------------------------------------------------------ envelope
    def line(self, t: float, msg: str, rank: int | None = None) -> str:
        """`[ts TPk] msg`; TP=1 and the main process print no rank token."""
        prefix = f" TP{rank}" if rank is not None and self.tp > 1 else ""
        return f"[{stamp(t)}{prefix}] {msg}\n"

    def uvicorn(self, t: float, msg: str, level: str = "INFO") -> str:
        """uvicorn's formatter under SGLang: `[ts] INFO:     msg` (levelprefix padded to 9)."""
        return f"[{stamp(t)}] {level + ':':<9} {msg}\n"

    def access(self, t: float, client: str, method: str, path: str, status: int, phrase: str) -> str:
        return self.uvicorn(t, f'{client} - "{method} {path} HTTP/1.1" {status} {phrase}')

    # ------------------------------------------------------------------------------------ before ranks
    def preamble(self, t: float, speculative: bool) -> str:
        """Lines printed while server args are resolved (bare lines before 0.5.14: logging not set up yet)."""
        reset = (
            "Max running requests is reset to 48 for speculative decoding. "
            "You can override this by explicitly setting --max-running-requests."
        )
        if self.new:
            text = self.line(t, "Attention backend not specified. Use fa3 backend by default.")
            return text + (self.line(t, reset) if speculative else "")
        if not speculative:
            return ""
        overlap = (
            "Overlap scheduler is disabled when spec v2 is off or using unsupported speculative algorithm. "
            "You can set env SGLANG_ENABLE_SPEC_V2=True to enable the experimental overlap scheduler. "
        )
        return f"{reset}\n{overlap}\n"

    def server_args(self, t: float, fields: Sequence[tuple[str, object]]) -> str:
        """repr form `ServerArgs(k=v, …)` up to 0.5.14, dict form `{'k': v, …}` from 0.5.19."""
        if self.new:
            body = "{" + ", ".join(f"{k!r}: {v!r}" for k, v in fields) + "}"
        else:
            body = "ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in fields) + ")"
        return self.line(t, f"server_args={body}")

    # ---------------------------------------------------------------------------------- rank milestones
    def init_begin(self) -> str:
        return "Init parallel begin." if self.new else "Init torch distributed begin."

    def init_end(self, elapsed: float, mem: float) -> str:
        if self.new:
            return f"Init parallel ends. elapsed={elapsed:.2f} s"
        return f"Init torch distributed ends. elapsed={elapsed:.2f} s, mem usage={gb(mem)} GB"

    def nccl(self) -> str:
        return "sglang is using nccl==2.28.3" if self.new else "sglang is using nccl==2.27.3"

    @staticmethod
    def mem_baseline(mem: float) -> str:
        return f"Memory baseline taken. mem usage={gb(mem)} GB"

    @staticmethod
    def load_begin(avail: float) -> str:
        return f"Load weight begin. avail mem={gb(avail)} GB"

    @staticmethod
    def weights_format() -> str:
        return "Using model weights format ['*.safetensors']"

    def load_end(self, elapsed: float, model_type: str, avail: float, mem: float) -> str:
        dtype = "" if self.new else "dtype=torch.bfloat16, "
        return (
            f"Load weight end. elapsed={elapsed:.2f} s, type={model_type}, {dtype}"
            f"avail mem={gb(avail)} GB, mem usage={gb(mem)} GB."
        )

    def kv_dtype(self) -> str | None:
        return None if self.new else "Using KV cache dtype: torch.bfloat16"

    def kv_alloc(self, tokens: int, k: float, v: float) -> str:
        dtype = "dtype: torch.bfloat16, " if self.new else ""
        return f"KV Cache is allocated. {dtype}#tokens: {tokens}, K size: {gb(k)} GB, V size: {gb(v)} GB"

    @staticmethod
    def pool_end(avail: float) -> str:
        return f"Memory pool end. avail mem={gb(avail)} GB"

    # ------------------------------------------------------------------------------------ CUDA graphs
    def weights_bar_desc(self) -> str:
        return "Multi-thread loading shards" if self.new else "Loading safetensors checkpoint shards"

    def weights_bar_newline(self) -> bool:
        """Up to 0.5.9 the bar format ends in `\\n` (every frame its own line); later frames are `\\r` only."""
        return not self.new

    def capture_begin(self, graph: str, avail: float, sizes: Sequence[int], per_req: int) -> str:
        """graph: target_prefill | target_decode | target_verify | draft_decode | draft_extend."""
        if not self.new:
            label = {"draft_decode": "draft ", "draft_extend": "draft extend "}.get(graph, "")
            return f"Capture {label}cuda graph begin. This can take up to several minutes. avail mem={gb(avail)} GB"
        role, kind = graph.split("_")
        if kind == "prefill":
            return (
                f"Capture {role} prefill CUDA graph begin. backend=breakable, num_tokens={list(sizes)}, "
                f"avail mem={gb(avail)} GB"
            )
        bs = f"bs={list(sizes)}, " if role == "draft" else ""
        return f"Capture {role} {kind} CUDA graph begin. backend=full, num_tokens_per_req={per_req}, {bs}avail mem={gb(avail)} GB"

    def capture_steps(self, graph: str) -> int:
        """main: a speculative draft graph is captured one step at a time, a begin line per step (2026 logs:
        `Capture draft extend cuda graph begin (step 2)`); 1 elsewhere."""
        return 3 if self.main and graph.startswith("draft") else 1

    @staticmethod
    def capture_step_begin(graph: str, step: int) -> str:
        return f"Capture {graph.replace('_', ' ')} cuda graph begin (step {step})"

    def tree_cache(self) -> str | None:
        """main: the prefix cache, built right after the KV pool."""
        if not self.main:
            return None
        return (
            "Tree cache initialized: source=default impl=RadixCache hybrid_swa=False hybrid_ssm=False "
            "hicache_attached=False streaming_wrapped=False"
        )

    def capture_stagger_s(self, rank: int) -> float:
        """main: ranks end the regular capture at different times (sglang#20758): one rank's piecewise capture may
        begin before another's regular capture ends."""
        return 0.35 * rank if self.main else 0.0

    def capture_bs(self, sizes: Sequence[int]) -> str | None:
        return None if self.new else f"Capture cuda graph bs {list(sizes)}"

    def capture_end(self, graph: str, elapsed: float, mem: float, avail: float, sizes: Sequence[int]) -> str:
        if not self.new:
            label = {"draft_decode": "draft ", "draft_extend": "draft extend "}.get(graph, "")
            return (
                f"Capture {label}cuda graph end. Time elapsed: {elapsed:.2f} s. mem usage={gb(mem)} GB. "
                f"avail mem={gb(avail)} GB."
            )
        role, kind = graph.split("_")
        bs = f"bs={list(sizes)}, " if graph in ("target_verify", "target_decode") else ""
        return (
            f"Capture {role} {kind} CUDA graph end. {bs}elapsed={elapsed:.2f} s, mem usage={gb(mem)} GB, "
            f"avail mem={gb(avail)} GB."
        )

    def capture_bar_desc(self, graph: str, size: int, avail: float) -> str:
        if graph == "target_prefill":
            return f"Capturing prefill shape (num_tokens={size} avail_mem={gb(avail)} GB)"
        return f"Capturing batches (bs={size} avail_mem={gb(avail)} GB)"

    def capture_logged_by_all(self, graph: str) -> bool:
        """0.5.14+ logs the draft graph lines on TP0 only; older versions on every rank."""
        return not (self.new and graph.startswith("draft"))

    @staticmethod
    def registering() -> str:
        return "Registering 4128 cuda graph addresses"

    @staticmethod
    def max_tokens(tokens: int, max_running: int, context_len: int, avail: float) -> str:
        return (
            f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            f"max_running_requests={max_running}, context_len={context_len}, available_gpu_mem={gb(avail)} GB"
        )

    # ------------------------------------------------------------ piecewise CUDA graph, DeepGEMM JIT (issue 12)
    @staticmethod
    def piecewise_begin(avail: float) -> str:
        return f"Capture piecewise CUDA graph begin. avail mem={gb(avail)} GB"

    @staticmethod
    def piecewise_end(elapsed: float, mem: float, avail: float) -> str:
        return (
            f"Capture piecewise CUDA graph end. Time elapsed: {elapsed:.2f} s. mem usage={gb(mem)} GB. "
            f"avail mem={gb(avail)} GB."
        )

    @staticmethod
    def piecewise_compile_desc(num_tokens: int) -> str:
        return f"Compiling num tokens (num_tokens={num_tokens})"

    @staticmethod
    def piecewise_capture_desc(num_tokens: int, avail: float) -> str:
        return f"Capturing num tokens (num_tokens={num_tokens} avail_mem={gb(avail)} GB)"

    @staticmethod
    def deepgemm_session() -> str:
        return (
            "Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20 mins) if you have "
            "not run `sglang.compile_deep_gemm`. It is recommended to run `sglang.compile_deep_gemm` with same args "
            "as `sglang.launch_server` for pre-compilation to reduce the overhead if you have not run it before. "
            "For example: `python3 -m sglang.compile_deep_gemm --model deepseek-ai/DeepSeek-V3 --tp 8 "
            "--trust-remote-code`"
        )

    @staticmethod
    def deepgemm_kernel(kind: str, n: int, k: int, groups: int) -> str:
        return (
            f"Try DeepGEMM JIT Compiling for <{kind}> N={n}, K={k}, num_groups={groups} with all Ms. It only takes a "
            f"little time (typically 1 sec) if you have run `python3 -m sglang.compile_deep_gemm`. "
        )

    DEEPGEMM_BAR = "DeepGEMM warmup"

    # --------------------------------------------------------------------------------- main after ready
    def startup_timings(self, load: float, kv: float, sched: float, graphs: dict[str, float], tok: float) -> str | None:
        if not self.new:
            return None
        names: tuple[str, ...] = ("prefill", "decode", "target_verify", "draft_prefill", "draft_decode", "draft_extend")
        if self.main and graphs.get("target_verify"):  # main: only the speculative graphs when they were captured
            names = ("target_verify", "draft_decode", "draft_extend")
        cg = ", ".join(f"{n}={graphs.get(n, 0.0):.2f}" for n in names)
        return (
            f"Engine startup timings (s): load_weight={load:.2f}, kv_cache_allocation={kv:.2f}, "
            f"scheduler_e2e={sched:.2f}, cuda_graph={{{cg}}}, tokenizer_e2e={tok:.2f}"
        )

    @staticmethod
    def sampling_defaults() -> str:
        return "Using default chat sampling params from model generation config: {'temperature': 0.6, 'top_p': 0.9}"

    def prefill(self, new_seq: int, new_token: int, usage: float, running: int, throughput: float) -> str:
        head = (
            f"Prefill batch, #new-seq: {new_seq}, #new-token: {new_token}, #cached-token: 0, "
            f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: 0, "
        )
        if self.new:
            graph = "True" if new_token <= 2048 else "False"
            return head + f"#pending-token: 0, cuda graph: {graph}, input throughput (token/s): {throughput:.2f}"
        return head + f"input throughput (token/s): {throughput:.2f}, cuda graph: False"

    @staticmethod
    def decode(
        running: int, tokens: int, usage: float, accept_len: float | None, accept_rate: float | None, throughput: float
    ) -> str:
        spec = ""
        if accept_len is not None and accept_rate is not None:
            spec = f"accept len: {accept_len:.2f}, accept rate: {accept_rate:.2f}, "
        return (
            f"Decode batch, #running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, {spec}"
            f"cuda graph: True, gen throughput (token/s): {throughput:.2f}, #queue-req: 0"
        )

    def kill_tree(self, pid: int, include_parent: bool) -> str | None:
        if not self.new:
            return None
        return f"kill_process_tree called: parent_pid={pid}, include_parent={include_parent}, pid={pid}"
