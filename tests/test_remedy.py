"""error.remedy (tui/core/remedy.py): SGLang's own printed suggestion first, else the table of known causes, else null;
the values computed from what the launch used; the launch command with the changes, every word quoted; every flag
the table names is one SGLang 0.5.23 accepts; every failed real log gets a remedy or an honest null."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.conftest import SHARED
from tui.commands.replay import replay_file, replay_stream
from tui.core import remedy_table
from tui.core.remedy import Change, apply_changes, remedy, remedy_line
from tui.core.remedy_clues import ClueReader
from tui.core.report import format_report, to_json
from tui.core.state import Phase, Readiness

FLAGS_FILE = Path(__file__).parent / "fixtures" / "sglang-0.5.23-flags.txt"


def _replay(text: str, launch: str | None = None) -> Readiness:
    import io

    state = replay_stream(io.BytesIO(text.encode()))
    return state.evolve(launch_command=launch) if launch else state


def _sglang_flags() -> set[str]:
    return {line for line in FLAGS_FILE.read_text().splitlines() if line and not line.startswith("#")}


# ------------------------------------------------------------------------------------ the table against 0.5.23


def test_the_flag_list_says_where_it_came_from_and_holds_sglangs_core_flags() -> None:
    head = FLAGS_FILE.read_text().splitlines()[0]
    assert head.startswith("# sglang 0.5.23:"), head
    flags = _sglang_flags()
    assert {"--model-path", "--tp-size", "--port", "--mem-fraction-static"} <= flags
    assert len(flags) > 300  # the whole command line, not a hand-written excerpt


def test_every_flag_the_table_names_is_one_sglang_0_5_23_accepts() -> None:
    flags = _sglang_flags()
    named = {f for row in remedy_table.ROWS for f in row.flags if f.startswith("--")}
    assert named, "the table names no flag"
    assert named <= flags, sorted(named - flags)
    # the older spellings it keeps for an older launch are not 0.5.23's (0.5.23 renamed them)
    assert not set(remedy_table.LEGACY_FLAGS) & flags
    assert set(remedy_table.LEGACY_FLAGS.values()) <= flags


def test_every_table_row_cites_an_address() -> None:
    for row in remedy_table.ROWS:
        assert row.ref.startswith("https://"), row


# ------------------------------------------------------------------------------------------------- the sources

LAUNCH_ARGS = (
    "[2026-12-01 10:00:00] server_args=ServerArgs(model_path='org/m', tp_size=2, port=30000, "
    "mem_fraction_static=0.88, cuda_graph_max_bs=160, context_length=32768, dist_timeout=None, quantization=None, "
    "host='0.0.0.0')\n"
)
CAPTURE = (
    "[2026-12-01 10:00:05 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=10.00 GB\n"
)
CAPTURE_OOM = (
    "[2026-12-01 10:00:09 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "x.py", line 1, in capture\n'
    "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB.\n"
)
ADVICE = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)


def test_sglangs_own_suggestion_is_quoted_and_its_values_computed_from_server_args() -> None:
    found = remedy(_replay(LAUNCH_ARGS + CAPTURE + CAPTURE_OOM + ADVICE))
    assert found is not None and found.source == "log"
    assert "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)" in found.text
    assert found.ref == remedy_table.DOCS_TUNING
    # 0.88 -> 0.05 below on the 0.05 grid; 160 -> half (the launch spelled it --cuda-graph-max-bs)
    assert found.changes == (
        Change("--mem-fraction-static", "0.80", "0.88"),
        Change("--cuda-graph-max-bs", "80", "160"),
    )
    assert found.command is None  # the launch command is not known: nothing to edit


def test_without_sglangs_words_the_table_names_the_capture_batch_size_and_the_fraction() -> None:
    launch = "python -m sglang.launch_server --model-path org/m --tp 2 --port 30000"
    found = remedy(_replay(LAUNCH_ARGS + CAPTURE + CAPTURE_OOM, launch))
    assert found is not None and found.source == "table" and found.cause == "capture_oom"
    assert found.ref == remedy_table.DOCS_TUNING
    assert [c.flag for c in found.changes] == ["--cuda-graph-max-bs", "--mem-fraction-static"]  # the log's spelling
    assert found.command == launch + " --cuda-graph-max-bs 80 --mem-fraction-static 0.80"


def test_the_capture_batch_size_comes_from_the_capture_bar_when_server_args_did_not_say() -> None:
    args = LAUNCH_ARGS.replace("cuda_graph_max_bs=160, ", "")
    bar = "Capturing batches (bs=48 avail_mem=17.30 GB):   4%|▍         | 1/23 [00:00<00:00, 56.65it/s]\r"
    found = remedy(_replay(args + CAPTURE + bar + "\n" + CAPTURE_OOM))
    assert found is not None
    assert Change("--cuda-graph-max-bs-decode", "24", None) in found.changes  # 0.5.23's spelling, half of 48


def test_a_new_launch_in_the_log_drops_the_last_ones_suggestion() -> None:
    second = LAUNCH_ARGS.replace("0.88", "0.7")
    state = _replay(LAUNCH_ARGS + CAPTURE + CAPTURE_OOM + ADVICE + second)
    assert state.clues is not None and state.clues.advice == () and "0.7" in state.clues.args_line
    assert remedy(state) is None  # and the new launch has not failed


def test_the_launch_commands_values_come_before_server_args_and_every_word_is_quoted() -> None:
    launch = "NCCL_DEBUG=WARN python -m sglang.launch_server --model-path 'org/my model' --mem-fraction-static=0.9"
    state = _replay(LAUNCH_ARGS + CAPTURE + CAPTURE_OOM, launch)
    found = remedy(state)
    assert found is not None and Change("--mem-fraction-static", "0.85", "0.9") in found.changes
    assert found.command is not None
    assert shlex.split(found.command)[:5] == ["NCCL_DEBUG=WARN", "python", "-m", "sglang.launch_server", "--model-path"]
    assert "'org/my model'" in found.command and "--mem-fraction-static=0.85" in found.command


def test_apply_changes_sets_an_environment_variable_before_the_command_and_quotes_hostile_values() -> None:
    out = apply_changes("python -m x --port 1", [Change("no_proxy", "a;b $(x)"), Change("--port", "2", "1")])
    assert out == "'no_proxy=a;b $(x)' python -m x --port 2"
    assert shlex.split(out) == ["no_proxy=a;b $(x)", "python", "-m", "x", "--port", "2"]


def test_kv_cache_too_small_raises_the_fraction_as_sglang_says() -> None:
    line = "[2026-12-01 10:00:04 TP0] RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    found = remedy(_replay(LAUNCH_ARGS + line))
    assert found is not None and found.source == "log"
    assert found.changes == (Change("--mem-fraction-static", "0.93", "0.88"),)


def test_port_in_use_names_the_port_and_moves_the_launch_to_the_next() -> None:
    line = (
        "[2026-12-01 10:00:04] ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): "
        "address already in use\n"
    )
    launch = "python -m sglang.launch_server --port 30000"
    found = remedy(_replay(LAUNCH_ARGS + line, launch))
    assert found is not None and "port 30000 is taken" in found.text
    assert found.changes == (Change("--port", "30001", "30000"),)
    assert found.command == "python -m sglang.launch_server --port 30001"


def test_no_remedy_for_a_failure_no_row_knows_nor_for_a_state_that_did_not_fail() -> None:
    unknown = (
        "[2026-12-01 10:00:04 TP0] Scheduler hit an exception: Traceback (most recent call last):\nValueError: x\n"
    )
    state = _replay(LAUNCH_ARGS + unknown)
    assert state.phase is Phase.FAILED and remedy(state) is None
    assert to_json(state)["error"] == {"kind": "exception", "line": "ValueError: x", "remedy": None}
    assert "remedy: none known for this failure" in format_report(state)
    assert remedy(_replay(LAUNCH_ARGS + CAPTURE)) is None
    assert remedy_line(_replay(LAUNCH_ARGS + CAPTURE)) == ""


def test_the_clue_reader_reads_a_line_cut_across_chunks() -> None:
    reader = ClueReader()
    data = (LAUNCH_ARGS + CAPTURE_OOM + ADVICE).encode()
    said = [reader.feed(data[i : i + 7]) for i in range(0, len(data), 7)]
    last = [s for s in said if s is not None][-1]
    assert last.args_line.startswith("server_args=ServerArgs(model_path='org/m'")
    assert last.advice[0] == "Possible solutions:" and len(last.advice) == 4


# ------------------------------------------------------------------------------------------------- real logs

# Every failed log of ../shared/real-logs*: its remedy's source and a word it must hold, or None (no known remedy).
REAL = {
    "002-mistral7b-warmup-failed-502.log": ("table", "no_proxy"),
    "005-dsv2.5-tp8-capture-failed-illegal-memory-access.log": ("log", "--mem-fraction-static"),
    "009-dsv2.5-tp8-old-format-exception-in-run_tp_server.log": None,
    "010-dsv3.2-npu-capture-failed-sigquit.log": ("log", "--cuda-graph-max-bs"),
    "014-srun-node-prefix-nccl-distbackenderror.log": ("table", "NCCL_SOCKET_IFNAME"),
    "018-dynamo-tracing-format-capture-end-zmq-error-truncated.log": None,
    "020-multinode-h20-capture-failed-cuda-oom-traceback.log": ("table", "--cuda-graph-max-bs-decode"),
    "026-dsr1-nextn-draft-worker-scheduler-exception.log": None,
    "027-ktransformers-sigquit-before-scheduler-exception-load-model.log": None,
    "029-phi3.5-capture-begin-traceback-flashinfer.log": None,
    "030-nccl-unhandled-system-error-unindented-traceback.log": ("table", "GLOO_SOCKET_IFNAME"),
    "031-nccl-unhandled-system-error-indented-traceback.log": ("table", "GLOO_SOCKET_IFNAME"),
    "032-verl-serving-time-scheduler-exception-tp3-foreign-line.log": None,
    "038-deepep-normal-dp4-tp4-capture-scheduler-exception.log": None,
    "053-nccl-watchdog-collective-timeout-c10-frames-no-sglang-lines.log": ("table", "NCCL_DEBUG"),
    "054-watchdog-timeout-pyspy-missing-sigquit-flashinfer-foreign.log": None,
    "055-pd-decode-dp49-bootstrap-refused-then-scheduler-exception.log": None,
    "059-serving-access-log-then-watchdog-timeout-redacted-pyspy-missing.log": None,
    "060-dp4-tp4-pyspy-failed-before-watchdog-timeout-partial-first-line.log": None,
    "063-zmq-address-in-use-root-cause-first-line-elided-paths.log": ("table", "port 50000"),
}


def _real_logs() -> list[Path]:
    return sorted(p for d in sorted(SHARED.glob("real-logs*")) for p in d.glob("*.log"))


def test_every_failed_real_log_gets_a_remedy_or_an_honest_null() -> None:
    logs = _real_logs()
    if not logs:
        pytest.skip("../shared/real-logs* is not present on this machine")
    failed = {}
    for path in logs:
        state = replay_file(str(path))
        if state.phase is Phase.FAILED:
            failed[path.name] = to_json(state)["error"]
    assert set(failed) == set(REAL), "a failed log without an expectation here (or one that no longer fails)"
    for name, error in failed.items():
        assert isinstance(error, dict)
        want, got = REAL[name], error["remedy"]
        if want is None:
            assert got is None, (name, got)
            continue
        assert got is not None, name
        source, word = want
        assert got["source"] == source, (name, got)
        assert word in json.dumps(got), (name, got)
        assert got["ref"].startswith("https://"), (name, got)
        if error["kind"] == "oom":  # an OOM names the capture batch size or the memory fraction
            assert {c["flag"] for c in got["changes"]} & {"--mem-fraction-static", "--cuda-graph-max-bs-decode"}


def test_a_failed_kernel_build_names_the_cache_directory_the_log_names() -> None:
    build = (
        "[2026-12-01 10:00:05 TP0] FAILED: /root/.cache/flashinfer/90/cached_ops/batch_decode/batch_decode.cuda.o\n"
        "[2026-12-01 10:00:06 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "x.py", line 1, in build\n'
        "RuntimeError: Error building extension 'batch_decode': ninja: build stopped: subcommand failed.\n"
    )
    found = remedy(_replay(LAUNCH_ARGS + build))
    assert found is not None and found.cause == "jit_build" and found.source == "table"
    assert found.text.endswith(": /root/.cache/flashinfer/90") and found.changes == () and found.command is None
    # no directory named: nothing to say (never a guessed path)
    assert remedy(_replay(LAUNCH_ARGS + build.split("\n", 1)[1])) is None


def test_the_draft_model_out_of_memory_leaves_it_room() -> None:
    lines = (
        "[2026-12-01 10:00:01 TP0] Load weight begin. avail mem=70.00 GB\n"
        "[2026-12-01 10:00:04 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=30.00 GB\n"
        "[2026-12-01 10:00:05 TP0] KV Cache is allocated. #tokens: 100000, K size: 10 GB, V size: 10 GB\n"
        "[2026-12-01 10:00:06 TP0] Load weight begin. avail mem=2.00 GB\n"
        "[2026-12-01 10:00:07 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "eagle_worker.py", line 1, in __init__\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB.\n"
    )
    args = LAUNCH_ARGS.replace("host='0.0.0.0'", "host='0.0.0.0', speculative_algorithm='EAGLE3'")
    state = _replay(args + lines)
    found = remedy(state)
    assert state.timeline[-2].model == "draft", state.timeline
    assert found is not None and found.cause == "draft_oom"
    assert found.changes == (Change("--mem-fraction-static", "0.80", "0.88"),)


def test_a_value_the_flag_does_not_take_makes_no_command() -> None:
    from tui.core.remedy import takes

    assert takes(Change("--mem-fraction-static", "0.80")) and takes(Change("--port", "30001"))
    assert not takes(Change("--mem-fraction-static", "0.8; rm -rf ~")) and not takes(Change("--port", "70000"))
    assert not takes(Change("--no-such-flag", "1")) and not takes(Change("A B", "x"))
    assert takes(Change("no_proxy", "localhost,127.0.0.1")) and not takes(Change("no_proxy", "$(id)"))
    # a value read from the log that the flag does not take (here SGLang's example, as printed) makes no command
    args = LAUNCH_ARGS.replace("mem_fraction_static=0.88, ", "")
    advice = ADVICE.replace("(e.g., 0.8 or 0.7)", "(e.g., 0.8.5)")
    found = remedy(_replay(args + CAPTURE + CAPTURE_OOM + advice, "python -m sglang.launch_server"))
    assert found is not None and Change("--mem-fraction-static", "0.8.5", None) in found.changes
    assert found.command is None


def test_a_hosts_out_of_memory_gets_no_gpu_advice() -> None:
    lines = (
        "[2026-12-01 10:00:05 TP0] Capture cuda graph begin. This can take up to several minutes.\n"
        "[2026-12-01 10:00:06 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "x.py", line 1, in capture\n'
        "MemoryError: Out of memory: Killed process 4242 (python) total-vm:900GB\n"
    )
    state = _replay(LAUNCH_ARGS + lines)
    assert state.phase is Phase.FAILED and state.error is not None
    assert remedy(state) is None, (state.error, remedy(state))
