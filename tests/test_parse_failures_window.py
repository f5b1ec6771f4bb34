"""Failure kinds real logs showed that the parser missed (issue 21), the lines that must not be failures, and the TP
size of a TP group that spans nodes.

Each failure is built from the real text (public issue threads: sgl-project/sglang #387, #1693, #3424, #3709 and
the HF hub's messages) or from the format string of the library that prints it; each "not a failure" from SGLang's
own lines (python/sglang/srt/…) or PyTorch's c10d warnings. Through the real parser and reducer, and
`replay --json`'s object.
"""

from __future__ import annotations

import io

import pytest

from tui.commands.replay import replay_stream
from tui.core.events import Failure
from tui.core.explain import evidence
from tui.core.logparse import LogParser
from tui.core.report import to_json
from tui.core.state import Phase, Readiness

DAY = "2026-01-10"


def ts(sec: int, rank: str | None = None) -> str:
    r = f" {rank}" if rank else ""
    return f"[{DAY} 10:{sec // 60:02d}:{sec % 60:02d}{r}]"


def replay(text: str) -> Readiness:
    return replay_stream(io.BytesIO(text.encode()), "failures")


def failures(text: str) -> list[Failure]:
    parser = LogParser()
    return [e for e in parser.feed(text.encode()) + parser.flush() if isinstance(e, Failure)]


LAUNCH = f"{ts(0)} server_args=ServerArgs(model_path='meta-llama/Llama-3.2-1B-Instruct', tp_size=1, port=30000)\n"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/transformers/utils/hub.py", line 543, in cached_files\n'
    "    raise OSError(\n"
)
# transformers' OSError for a gated repo, over huggingface_hub's 401 (sgl-project/sglang#14644's log)
GATED = (
    "OSError: You are trying to access a gated repo.\n"
    "Make sure to have access to it at https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct.\n"
    "401 Client Error. (Request ID: Root=1-695139c1-20c276683bbfa05022511a7b;379c2def-ca77-4fc6-9489-6fc1f7a44e40)\n"
    "\n"
    "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct/resolve/main/config.json.\n"
    "Access to model meta-llama/Llama-3.2-1B-Instruct is restricted. You must have access to it and be authenticated "
    "to access it. Please log in.\n"
)


# ------------------------------------------------------------------------------------------ Hugging Face


def test_a_gated_repo_is_model_not_found() -> None:
    s = replay(LAUNCH + TRACEBACK + GATED)
    assert s.phase is Phase.FAILED and s.error is not None and s.error.kind == "model_not_found"
    assert s.error.line == "OSError: You are trying to access a gated repo." and s.error.root_cause
    obj = to_json(s)
    error = obj["error"]
    assert isinstance(error, dict) and error["kind"] == "model_not_found"
    assert error["line"] == "OSError: You are trying to access a gated repo."
    assert "HF_TOKEN" in error["remedy"]["text"] and error["remedy"]["source"] == "table"  # tests/test_remedy.py


@pytest.mark.parametrize(
    "window",
    [
        # the message lines alone (a window that starts under the exception line; sgl-project/sglang#387)
        "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-2-7b-chat-hf/resolve/main/config.json.\n"
        "Access to model meta-llama/Llama-2-7b-chat-hf is restricted. You must be authenticated to access it.\n",
        # huggingface_hub's own exception line (a 401 without a token; older hubs say "utils._errors")
        "huggingface_hub.utils._errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-661471eb-38c6ceb0)\n",
        # older hubs' message: "Repo model … is gated. You must be authenticated to access it."
        "Repo model meta-llama/Llama-2-7b is gated. You must be authenticated to access it.\n",
        # a 403: a token without access
        "Access to model meta-llama/Llama-3.1-70B is restricted and you are not in the authorized list. Visit "
        "https://huggingface.co/meta-llama/Llama-3.1-70B to ask for access.\n",
        # a private or missing repo: RepositoryNotFoundError's message line
        "Repository Not Found for url: https://huggingface.co/api/models/acme/private-7b/revision/main.\n",
        # requests' text of a 401 from the hub
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
        "https://huggingface.co/api/models/meta-llama/Llama-2-7b-hf/revision/main\n",
    ],
)
def test_hf_auth_and_missing_repo_lines_fail_the_launch_even_in_a_window(window: str) -> None:
    got = failures(window)
    assert got and got[0].kind == "model_not_found" and got[0].root_cause
    assert replay(window).error.kind == "model_not_found"


def test_the_hf_message_lines_under_a_reported_exception_add_no_failures() -> None:
    got = failures(LAUNCH + TRACEBACK + GATED)
    assert [f.line for f in got] == ["OSError: You are trying to access a gated repo."]


@pytest.mark.parametrize(
    "line",
    [
        # SGLang tolerates these: get_generation_config catches the OSError (utils/hf_transformers/common.py),
        # the safetensors index is optional (model_loader/weight_utils.py), processor side files are optional
        "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: "
        "https://huggingface.co/Qwen/Qwen2.5-7B-Instruct/resolve/main/generation_config.json",
        "huggingface_hub.errors.EntryNotFoundError: 404 Client Error. (Request ID: Root=1-67) Entry Not Found for url: "
        "https://huggingface.co/Qwen/Qwen2-VL-7B/resolve/main/preprocessor_config.json.",
        "Entry Not Found for url: https://huggingface.co/acme/m/resolve/main/model.safetensors.index.json.",
        f"{ts(3)} 404 Client Error: Not Found for url: https://huggingface.co/acme/m/resolve/main/chat_template.jinja",
    ],
)
def test_a_404_for_a_file_sglang_does_without_is_no_failure(line: str) -> None:
    assert failures(LAUNCH + line + "\n") == []
    assert replay(LAUNCH + line + "\n").phase is Phase.STARTING


def test_a_404_for_the_models_config_is_a_failure() -> None:
    line = "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://huggingface.co/acme/m/resolve/main/config.json"
    got = failures(LAUNCH + TRACEBACK + line + "\n")
    assert got and got[0].kind == "model_not_found"


def test_a_tolerated_404_traceback_leaves_the_real_failure_after_it() -> None:
    """A chain whose first exception is the optional file's 404 and whose last is the real cause."""
    text = (
        LAUNCH + TRACEBACK + "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: "
        "https://huggingface.co/acme/m/resolve/main/generation_config.json\n"
        "\nDuring handling of the above exception, another exception occurred:\n\n"
        + TRACEBACK
        + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB.\n"
    )
    got = failures(text)
    assert [f.kind for f in got] == ["oom"]


# ------------------------------------------------------------------------------------------ NCCL watchdog

WATCHDOG_WHAT = (
    "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: "
    "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, "
    "NumelIn=19008, NumelOut=152064, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n"
)
WATCHDOG_FRAMES = (
    "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 (most recent "
    "call first):\n"
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3b6d41df86 in "
    "/usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)\n"
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
    "std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f3b6e71a8d2 in /usr/local/lib/python3.10/dist-packages/torch/lib/"
    "libtorch_cuda.so)\n"
)


def test_an_nccl_watchdog_dump_that_starts_at_what_is_nccl() -> None:
    """sgl-project/sglang#1693 and #3709: the dump as a window that begins at libstdc++'s `what():` line."""
    s = replay(WATCHDOG_WHAT + WATCHDOG_FRAMES)
    assert s.phase is Phase.FAILED and s.error is not None and s.error.kind == "nccl" and s.error.root_cause
    assert "Watchdog caught collective operation timeout" in s.error.line
    assert [f.kind for f in failures(WATCHDOG_WHAT + WATCHDOG_FRAMES)] == ["nccl"]  # the frames are no failures


def test_the_what_line_states_the_cause_terminate_called_only_marks() -> None:
    text = "terminate called after throwing an instance of 'c10::DistBackendError'\n" + WATCHDOG_WHAT + WATCHDOG_FRAMES
    got = failures(text)
    assert [(f.kind, f.root_cause) for f in got] == [("nccl", False), ("nccl", True)]
    s = replay(text)
    assert s.error is not None and s.error.root_cause and "Watchdog caught" in s.error.line


def test_a_what_line_inside_another_ranks_traceback_is_still_read() -> None:
    text = (
        f"{ts(1, 'TP0')} Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/x/scheduler.py", line 3130, in run_scheduler_process\n' + WATCHDOG_WHAT
    )
    assert any(f.kind == "nccl" and f.root_cause for f in failures(text))


# ------------------------------------------------------------------------------------------ port in use


def test_errno_98_is_port_in_use_even_when_the_line_is_cut() -> None:
    """uvicorn's bind error in SGLang's format, cut before "address already in use" (reference §4 F)."""
    cut = f"{ts(9)} ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30"
    for text in (cut, cut + "000): address already in use\n"):
        s = replay(LAUNCH + text)
        assert s.phase is Phase.FAILED and s.error is not None and s.error.kind == "port_in_use", text
    assert failures("OSError: [Errno 98] Address already in use\n")[0].kind == "port_in_use"


# ------------------------------------------------------------------------------------------ not failures

NOT_FAILURES = [
    # layers/attention/triton_ops/decode_attention.py (0.4.6), and the MLIR error it announces
    f"{ts(1, 'TP0')} The following error message 'operation scheduled before its operands' can be ignored.",
    'loc("/sgl/decode_attention.py":310:16): error: operation scheduled before its operands',
    # PyTorch c10d: TCPStore tries IPv6 first, then IPv4, and goes on
    "[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).",
    "[rank0]:[W1129 10:00:03.123 socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - "
    "Address already in use).",
    # NCCL_DEBUG=INFO after a rank died elsewhere: the proxy's notes and teardown
    "h200-01:3120461:3121011 [3] NCCL INFO [Service thread] Connection closed by localRank 3",
    "h200-01:3120461:3121011 [2] NCCL INFO comm 0x55d5c8a0 rank 2 nranks 8 cudaDev 2 busId 3d000 - Abort COMPLETE",
    "h200-01:3120461:3121011 [3] NCCL WARN [Service thread] Accept failed Resource temporarily unavailable",
    # distributed/device_communicators/custom_all_reduce.py: a warning that says "failed" and "error"
    f"{ts(1, 'TP1')} Setup Custom allreduce failed with CUDART error: peer access is not supported between these two "
    "devices. To silence this warning, specify --disable-custom-all-reduce explicitly.",
    # 0.4.6 scheduler.py: a retract, not an OOM
    f"{ts(1, 'TP0')} Decode out of memory happened. #retracted_reqs: 2, #new_token_ratio: 0.4000 -> 0.6000",
    # huggingface_hub's download warning and a benign notice that names a gated model
    f"{ts(1)} Xet Storage is enabled for this repo, but the 'hf_xet' package is not installed. Falling back to "
    "regular HTTP download.",
]


@pytest.mark.parametrize("line", NOT_FAILURES)
def test_lines_that_must_not_be_failures(line: str) -> None:
    assert failures(LAUNCH + line + "\n") == [], line
    assert replay(LAUNCH + line + "\n").error is None


def test_nccl_lines_after_a_real_failure_keep_the_real_cause() -> None:
    text = (
        LAUNCH
        + f"{ts(5, 'TP3')} Scheduler hit an exception: Traceback (most recent call last):\n"
        + '  File "/x/model_runner.py", line 968, in load_model\n'
        + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB.\n"
        + "h200-01:3120461:3121011 [0] NCCL INFO [Service thread] Connection closed by localRank 3\n"
        + "h200-01:3120461:3121011 [1] NCCL INFO [Service thread] Connection closed by localRank 3\n"
    )
    s = replay(text)
    assert s.error is not None and s.error.kind == "oom" and s.error.line.startswith("torch.OutOfMemoryError")


# ------------------------------------------------------------------------------------------ TP across nodes

NODE0_RANKS = "".join(f"{ts(2, f'TP{i}')} Init torch distributed begin.\n" for i in range(8))


def nccl_init(nranks: int, ranks: range) -> str:
    """NCCL's init.cc line per rank of one communicator: `comm %p rank %d nranks %d cudaDev %d … - Init COMPLETE`."""
    return "".join(
        f"h200-01:31204{r}:31210{r} [{r % 8}] NCCL INFO comm 0x55d5c8a0{r:02d} rank {r} nranks {nranks} cudaDev "
        f"{r % 8} nvmlDev {r % 8} busId {r}d000 commId 0x9ab1c2d3e4f50617 - Init COMPLETE\n"
        for r in ranks
    )


def test_nranks_16_on_a_node_that_shows_tp0_to_tp7_is_tp_16() -> None:
    s = replay(NODE0_RANKS + nccl_init(16, range(8)))
    assert s.server.tp_size == 16 and s.tp_inferred == "inferred: NCCL communicator of 16 ranks"
    assert to_json(s)["tp_size"] == 16
    assert "log: tp 16 inferred: NCCL communicator of 16 ranks" in evidence(s)
    assert replay(NODE0_RANKS).server.tp_size == 8  # the labels alone: TP0–7


def test_nranks_of_an_older_nccl_init_line() -> None:
    """NCCL's `comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d`."""
    line = "h200-01:3120460:3121001 [0] NCCL INFO comm 0x55d5c8a000 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
    assert replay(NODE0_RANKS + line).server.tp_size == 16


def test_the_tp_group_spanning_nodes_makes_one_nodes_labels_no_size() -> None:
    """custom_all_reduce_utils.py: `CustomAllreduce is disabled because this process group spans across nodes.`
    says TP > this node's ranks, not how many more: tp_size is unknown, and the evidence says why."""
    spans = "".join(
        f"{ts(3, f'TP{i}')} Custom allreduce is disabled because this process group spans across nodes.\n"
        for i in range(8)
    )
    s = replay(NODE0_RANKS + spans)
    assert s.server.tp_size is None and to_json(s)["tp_size"] is None and s.tp_spans_nodes
    assert "log: the TP group spans nodes (custom allreduce off): more ranks than this log's TP0–7" in evidence(s)
    assert replay(NODE0_RANKS + spans + nccl_init(16, range(8))).server.tp_size == 16  # a line that states it
    assert replay(NODE0_RANKS + spans + nccl_init(8, range(8))).server.tp_size is None  # 8 ranks: not the TP group


def test_server_args_tp_size_wins_over_the_log() -> None:
    launch = f"{ts(0)} server_args=ServerArgs(model_path='m', tp_size=16, nnodes=2, node_rank=0, port=30000)\n"
    assert replay(launch + NODE0_RANKS + nccl_init(32, range(8))).server.tp_size == 16


def test_nranks_with_pipeline_stages_or_a_weight_sync_group_is_not_tp() -> None:
    """With PP > 1 the largest communicator is TP × PP (the labels say PP); an RLHF weight-sync group
    (`init custom process group: …, world_size=9, …`, model_runner.py) holds the trainer's ranks too."""
    pp = "".join(f"{ts(2, f'PP{p} TP{i}')} Init torch distributed begin.\n" for p in range(2) for i in range(4))
    assert replay(pp + nccl_init(8, range(8))).server.tp_size == 4
    sync = (
        NODE0_RANKS
        + nccl_init(8, range(8))
        + f"{ts(9, 'TP0')} init custom process group: master_address=10.0.0.1, master_port=29600, rank_offset=1, "
        "rank=1, world_size=9, group_name=weight_update_group, backend=nccl\n" + nccl_init(9, range(8))
    )
    assert replay(sync).server.tp_size == 8
