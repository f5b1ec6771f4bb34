"""The project's table of known causes of a failed SGLang startup, and where each row comes from.

A row names a cause by the failure's kind and the words of its line, says in one sentence what to change, and
cites the SGLang doc or issue that says so. What the new values are is computed in tui/core/remedy.py from what
the launch used (`server_args`, the launch command). A failure no row matches has no remedy: never a guess.
The flags named here are SGLang 0.5.23's (tests/fixtures/sglang-0.5.23-flags.txt, read by tests/test_remedy.py);
LEGACY_FLAGS holds the older spellings a launch of an older SGLang still uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.core.vocab import ErrorKind

DOCS_TUNING = "https://docs.sglang.io/advanced_features/hyperparameter_tuning.html"
DOCS_ARGS = "https://docs.sglang.io/advanced_features/server_arguments.html"


@dataclass(frozen=True)
class Row:
    cause: str  # the row's name (tests and the board's short form read it)
    kinds: tuple[ErrorKind, ...]  # the failure kinds it may explain
    words: re.Pattern[str]  # what the failure line (or the error's context) says
    text: str  # the one sentence
    ref: str  # the SGLang doc or issue it comes from
    flags: tuple[str, ...]  # the flags and environment variables it may change (0.5.23 spellings)


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# The order is the order of precedence: the first row that matches is the remedy.
ROWS: tuple[Row, ...] = (
    Row(
        "draft_oom",
        ("oom",),
        _re(r"(?:CUDA|HIP|NPU) out of memory|OutOfMemoryError|CUDA error: out of memory"),
        "the draft model ran out of memory after the target took its share: leave it room",
        DOCS_TUNING,
        ("--mem-fraction-static",),
    ),
    Row(
        "capture_oom",
        ("oom",),
        _re(r"capture|cuda.?graph"),
        "CUDA graph capture ran out of memory: capture fewer batch sizes or leave more memory free",
        DOCS_TUNING,
        ("--cuda-graph-max-bs-decode", "--mem-fraction-static"),
    ),
    Row(
        "kv_cache_small",
        ("oom", "exception", "other"),
        _re(
            r"Not enough memory\. Please try to increase --mem-fraction-static|max_total_num_tokens|"
            r"KV cache pool|kv.?cache.*(?:negative|too small)|(?:negative|too small).*kv.?cache"
        ),  # fmt: skip
        "no room is left for the KV cache: give it a larger share of memory or shorten the context",
        DOCS_TUNING,
        ("--mem-fraction-static", "--context-length"),
    ),
    Row(
        "load_oom",
        ("oom",),
        _re(r"(?:CUDA|HIP|NPU) out of memory|OutOfMemoryError|CUDA error: out of memory"),
        "the weights do not fit these GPUs: spread them over more GPUs or quantize them",
        DOCS_ARGS,
        ("--tp-size", "--quantization"),
    ),
    Row(
        "nccl_collective_timeout",
        ("nccl",),
        _re(r"Watchdog caught collective operation timeout"),
        "a collective never finished (a rank stopped answering or hung): let NCCL say which (NCCL_DEBUG=INFO)",
        "https://docs.pytorch.org/docs/stable/distributed.html#common-environment-variables",
        ("NCCL_DEBUG",),
    ),
    Row(
        "nccl_timeout",
        ("nccl",),
        _re(r"timeout|timed out"),
        "the ranks did not all reach the NCCL rendezvous in time: start every node, give them longer, and let NCCL "
        "say why (NCCL_DEBUG=INFO)",
        DOCS_ARGS,
        ("--dist-timeout", "NCCL_DEBUG"),
    ),
    Row(
        "nccl_system",
        ("nccl",),
        _re(
            r"system error|ncclSystemError|failed to format addr|Connection refused|connectFullMesh|socket|"
            r"ncclRemoteError|Network is unreachable"
        ),  # fmt: skip
        "NCCL or Gloo could not reach the other ranks: set NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to the network "
        "interface the nodes reach each other on, and let NCCL say why (NCCL_DEBUG=INFO)",
        "https://github.com/sgl-project/sglang/issues/3226",
        ("NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"),
    ),
    Row(
        "port_in_use",
        ("port_in_use",),
        _re(r"."),
        "the port is taken (another server, or a leftover of this one): stop what holds it, or use another port",
        DOCS_ARGS,
        ("--port",),
    ),
    Row(
        "gated_model",
        ("model_not_found",),
        _re(r"gated|401 Client Error|403 Client Error|restricted|authenticated"),
        "the model is a gated Hugging Face repo: request access on its page and set HF_TOKEN to a token that has it",
        "https://huggingface.co/docs/hub/models-gated",
        ("HF_TOKEN",),
    ),
    Row(
        "model_missing",
        ("model_not_found",),
        _re(r"."),
        "the model path is neither a local folder nor a Hugging Face repo id: check --model-path",
        DOCS_ARGS,
        ("--model-path",),
    ),
    Row(
        "warmup_proxy",
        ("exception", "other"),
        _re(r"Response \[50[234]\]"),
        "the warmup request went to an HTTP proxy, which answered instead of the server: exempt the server's own "
        "address with no_proxy",
        "https://github.com/sgl-project/sglang/issues/9814",
        ("no_proxy",),
    ),
    Row(
        "jit_build",
        ("exception", "other"),
        _re(
            r"ninja|nvcc|CalledProcessError|BuildError|CompilationError|compil|JIT|\.so: cannot open|"
            r"Error building extension|lock"
        ),  # fmt: skip
        "a kernel build failed: a half-written build may be left in its cache directory; remove it and start again",
        "https://docs.flashinfer.ai/installation.html",
        (),
    ),
)

# Older SGLang spellings of the 0.5.23 flags above: a launch that used one keeps it (0.5.23 renamed
# --cuda-graph-max-bs to --cuda-graph-max-bs-decode / --cuda-graph-max-bs-prefill)
# a GPU's out of memory (a host's, the kernel's OOM killer, is none of these rows': more GPUs or a smaller memory
# fraction do not give a host more RAM)
GPU_OOM = _re(
    r"(?:CUDA|HIP|NPU|\[CUDA\]:) out of memory|OutOfMemoryError|cudaErrorMemoryAllocation|HIP error: out of memory"
)

LEGACY_FLAGS = {"--cuda-graph-max-bs": "--cuda-graph-max-bs-decode"}


def row(cause: str) -> Row:
    return next(r for r in ROWS if r.cause == cause)
