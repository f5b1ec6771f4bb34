"""Failure lines: which line says why the server failed, and what kind of failure it names.

Kinds: oom | nccl | port_in_use | model_not_found | exception | other. A root-cause line states the cause (the
exception line ending a traceback, PyTorch's OOM text); a generic marker only says that something failed
(`Received sigquit…`, `Scheduler hit an exception:` before its traceback, `Initialization failed.`).
A warning that merely contains the word "error" is not a failure, and neither is a Hugging Face 404 for a file
SGLang does without (generation_config.json, preprocessor_config.json, …: it catches those and goes on).
"""

from __future__ import annotations

import re

from tui.core.lazyre import lazy
from tui.core.vocab import ErrorKind

# Host memory exhausted: `OSError: [Errno 12] Cannot allocate memory` (ENOMEM), the kernel's OOM killer (`Out of
# memory: Killed process 4242 (python3)`, `oom-kill:constraint=…`, `Memory cgroup out of memory: …`), a pod's
# `OOMKilled`.
HOST_OOM_TEXT = (
    r"\[Errno 12\] Cannot allocate memory|Cannot allocate memory|Out of memory: Killed process|"
    r"Memory cgroup out of memory|invoked oom-killer|\boom-kill(?:er)?:|oom_reaper: reaped process|\bOOMKilled\b"
)
HOST_OOM = lazy(HOST_OOM_TEXT)
OOM = lazy(
    r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory|HIP out of memory|NPU out of memory|"
    r"\[CUDA\]: out of memory|HIP error: out of memory|cudaErrorMemoryAllocation|"
    r"Not enough memory\. Please try to increase --mem-fraction-static|" + HOST_OOM_TEXT,
    # the host's memory, not the GPU's: fork/mmap/pinned allocations failing, the kernel's OOM killer
)
# `[Errno 98]` is EADDRINUSE in Python's OSError text (uvicorn: `[Errno 98] error while attempting to bind on address
# (…): address already in use`, which a cut line may lose the end of). c10d's own `(errno: 98 - Address already in
# use)` warnings are not in it: TCPStore tries IPv6, then IPv4, and goes on.
PORT_IN_USE = lazy(
    r"[Aa]ddress already in use|EADDRINUSE|is not available in \d+ seconds|Port is already in use|\[Errno 98\]"
)
MODEL_NOT_FOUND = lazy(
    r"RepositoryNotFoundError|GatedRepoError|RevisionNotFoundError|EntryNotFoundError|HFValidationError|"
    r"Repository Not Found|404 Client Error: Not Found for url: https://huggingface\.co/|is not a local folder and is not a valid model identifier|"
    r"does not appear to have a file named|Can't load (?:the configuration|tokenizer) for|"
    r"Cannot find any model weights|We couldn't connect to 'https://huggingface\.co'|"
    r"No such file or directory: '[^']*(?:config\.json|\.safetensors|tokenizer)|"
    # huggingface_hub / transformers on a gated or private repo (401 without a token, 403 without access)
    r"Cannot access gated repo|You are trying to access a gated repo|Repo model \S+ is gated|"
    r"is restricted(?: and you are not in the authorized list)?\. (?:You must|Visit)|"
    r"40[13] Client Error(?:: \w+ for url: https://huggingface\.co/|\. \(Request ID: )",
)
# A Hugging Face 404 for a file SGLang does without: hf_transformers_utils.get_generation_config and
# weight_utils' index download catch it (python/sglang/srt/utils/hf_transformers/common.py,
# model_loader/weight_utils.py), transformers treats processor and tokenizer side files as optional.
OPTIONAL_HF_FILE = lazy(
    r"(?:404 Client Error|Entry Not Found|EntryNotFoundError)[^\n]*?https://huggingface\.co/\S*?/"
    r"(?:generation_config|preprocessor_config|processor_config|video_preprocessor_config|chat_template|"
    r"special_tokens_map|added_tokens|tokenizer_config|hf_quant_config|adapter_config|"
    r"(?:model|pytorch_model)\.(?:safetensors|bin)\.index)\.(?:json|jinja)\b"
)
NCCL = lazy(
    r"NCCL error|NCCL timeout|nccl(?:System|Internal|UnhandledCuda|Remote|InvalidUsage|InvalidArgument)Error|"
    r"DistBackendError|DistStoreError|DistNetworkError|Watchdog caught collective operation timeout|"
    r"ProcessGroupNCCL|NCCL communicator|c10d",
)
# The last line of a Python traceback: `torch.OutOfMemoryError: CUDA out of memory. …`, `Exception: …`.
EXCEPTION_LINE = lazy(
    r"(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|ExceptionGroup|Exit|Interrupt|Failure)|Exception|StopIteration)"
    r"(?::(?: .*)?)?$",
    re.ASCII,
)
_GENERIC_EXCEPTION = lazy(r"\w+ hit an exception:|^Exception in [\w.]+:?", re.ASCII)
_GENERIC_OTHER = lazy(
    r"Received sigquit from a child process|SIGQUIT received|Initialization failed\.|scheduler is dead|"
    r"died during initialization|crashed with exit code|DataParallelController \d+ terminated with|"
    r"Application startup failed|Child process unexpectedly failed with exitcode|"
    r"^terminate called after throwing",
)
# A generic marker cut off mid-word where the posted text ends (`… TP0] Scheduler hit an excep`): still the marker.
_CUT_HIT = lazy(
    r"(?:Scheduler|\w*Controller|\w*Manager|\w*Worker|Detokenizer\w*) hit (?P<rest>a[a-z ]{0,10})$", re.ASCII
)
_GLOG_ERROR = lazy(r"(?:\[rank\d+\]:)?\[E\d{4} ", re.ASCII)
_ROOT_OTHER = lazy(r"[Ww]atchdog timeout \(|^[\w.-]+: error: ", re.ASCII)
# Slurm's reports of its own steps, in a batch log beside the server's lines (`srun: error: n2: task 1: Terminated`,
# `slurmstepd: error: *** STEP 12.0 … CANCELLED …`): what a cancel or a crash did to a task, not the server's
# cause. A cancel is the job's state to say (tui/core/fold_job.py), a crash the server's own lines.
_SLURM_STEP_REPORTS = ("srun: ", "slurmstepd: ")


def host_memory(line: str) -> bool:
    """An oom line about the host's memory (RAM), not a GPU's."""
    return HOST_OOM.search(line) is not None


def is_hf_message(msg: str) -> bool:
    """A line huggingface_hub writes under its exception line (`Cannot access gated repo for url …`, `Repository Not
    Found for url: …`): the message of a failure, quoted by itself only when the exception line is not in view."""
    return msg.startswith(
        ("Cannot access gated repo", "Repository Not Found for url", "Access to model ", "Repo model ")
    )


def tolerated(text: str) -> bool:
    """A line about a failure SGLang goes on after: a 404 for an optional Hugging Face file."""
    return "huggingface.co/" in text and OPTIONAL_HF_FILE.search(text) is not None


def kind_of(text: str) -> ErrorKind | None:
    """The specific kind a line names (oom, port_in_use, model_not_found, nccl), or None."""
    if OOM.search(text):
        return "oom"
    if PORT_IN_USE.search(text):
        return "port_in_use"
    if MODEL_NOT_FOUND.search(text):
        return "model_not_found"
    if NCCL.search(text):
        return "nccl"
    return None


def what_failure(msg: str) -> tuple[ErrorKind, bool] | None:
    """(kind, root_cause) of libstdc++'s `  what():  …` line, which states the C++ exception that ended a process
    (`terminate called after throwing …` comes before it, but a window may begin at it): NCCL's watchdog
    `what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: [Rank 3]
    Watchdog caught collective operation timeout: WorkNCCL(…) ran for 600020 milliseconds before timing out.`"""
    body = msg.lstrip()
    if not body.startswith("what():"):
        return None
    rest = body[len("what():") :].strip()
    if not rest:
        return None
    return kind_of(rest) or "exception", True


def is_exception_line(msg: str) -> bool:
    """`Name: message` (or a bare `Name`) as the last line of a traceback prints it."""
    return bool(msg) and not msg[0].isspace() and EXCEPTION_LINE.match(msg) is not None


def exception_failure(msg: str) -> tuple[ErrorKind, bool]:
    """(kind, root_cause) of a traceback's exception line."""
    kind = kind_of(msg)
    if kind is not None:
        return kind, True
    if _GENERIC_OTHER.search(msg):  # `RuntimeError: Initialization failed. Please see the error messages above.`
        return "other", False
    return "exception", True


def marker_failure(msg: str) -> tuple[ErrorKind, bool, bool] | None:
    """(kind, root_cause, opens_traceback) for a failure line outside a traceback, or None.

    Generic markers carry root_cause=False; a line that names a specific cause carries True."""
    generic = _GENERIC_EXCEPTION.search(msg)
    if generic:
        rest = msg[generic.end() :]
        kind = kind_of(rest)
        if kind is not None:
            return kind, True, "Traceback" in rest
        return "exception", False, True
    cut = _CUT_HIT.match(msg.rstrip())
    if cut and "an exception".startswith(cut.group("rest")):
        return "exception", False, True
    if msg == "Killed":  # the shell's note that the server was SIGKILLed (often the kernel's OOM killer)
        return "other", False, False
    if _GENERIC_OTHER.search(msg):
        kind = "nccl" if msg.startswith("terminate called") and NCCL.search(msg) else "other"
        return kind, False, "Traceback" in msg or "warmup error" in msg
    if msg.startswith(("[E", "[rank")) and _GLOG_ERROR.match(msg):
        kind = kind_of(msg)
        return (kind, True, False) if kind is not None else None
    if "Watchdog caught collective operation timeout" in msg:
        return "nccl", True, False
    if OOM.search(msg):
        return "oom", True, False
    if "address already in use" in msg or "Port is already in use" in msg or "[Errno 98]" in msg:
        return "port_in_use", True, False
    if is_hf_message(msg):  # a window may begin under the exception line
        return ("model_not_found", True, False) if MODEL_NOT_FOUND.search(msg) and not tolerated(msg) else None
    if _ROOT_OTHER.search(msg) and not msg.startswith(_SLURM_STEP_REPORTS):
        return "other", True, False
    if is_exception_line(msg):
        kind = kind_of(msg)  # outside a traceback only a named cause counts
        if kind is not None:
            return kind, True, False
    return None
