"""The simulator's log is SGLang's: byte-exact tqdm frames, each version's spellings, and a log that the
project's parser reads back into the expected milestones, bars and final state (both versions)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Sims
from tests.helpers.sim import wait_for_log
from tui.sim.bars import WEIGHTS_FORMAT, frame
from tui.sim.params import SimParams
from tui.sim.script import rank_steps, scheduled_text

T0 = 1764410400.0  # a fixed start keeps the pure tests deterministic


def _text(fmt: str, rank: int, **kw: object) -> str:
    params = SimParams(log="/dev/null", port=1, t0=T0, fmt=fmt, **kw)  # type: ignore[arg-type]
    return scheduled_text(rank_steps(params, rank), params.speed)


def test_tqdm_frames_match_the_reference_bytes():
    assert frame(0, 23, 0.0) == "  0%|          | 0/23 [00:00<?, ?it/s]"
    desc = "Capturing batches (bs=48 avail_mem=25.71 GB)"
    assert frame(1, 23, 0.75, desc) == f"{desc}:   4%|▍         | 1/23 [00:00<00:16,  1.33it/s]"
    shards = "Loading safetensors checkpoint shards"
    assert frame(1, 30, 3.1, shards, WEIGHTS_FORMAT) == f"{shards}:   3% Completed | 1/30 [00:03<01:29,  3.10s/it]"
    assert frame(30, 30, 3725.0, shards, WEIGHTS_FORMAT).endswith("30/30 [1:02:05<00:00, 124.17s/it]")


def test_059_weight_bar_is_one_line_per_frame_and_ends_with_a_blank_line():
    text = _text("0.5.9", 0, shards=5)
    frames = re.findall(r"\rLoading safetensors checkpoint shards: +(\d+)% Completed \| (\d)/5 [^\r\n]*\n", text)
    assert [n for _, n in frames] == ["0", "1", "2", "3", "4", "5", "5"]
    assert re.search(r"\| 5/5 [^\r\n]*\n\n\[", text), "tqdm's close leaves an empty line"
    assert "Multi-thread loading shards" not in text


def test_0523_weight_bar_is_cr_only_frames_on_one_physical_line():
    text = _text("0.5.23", 0, shards=5)
    bar = re.search(r"(\rMulti-thread loading shards:[^\n]*)\n", text)
    assert bar is not None
    frames = bar.group(1).split("\r")[1:]
    assert [f.split(" | ")[1].split(" ")[0] for f in frames] == ["0/5", "1/5", "2/5", "3/5", "4/5", "5/5", "5/5"]


def test_only_rank0_prints_bars_and_every_rank_prints_its_milestones():
    for fmt in ("0.5.9", "0.5.23"):
        rank3 = _text(fmt, 3, shards=4)
        assert "\r" not in rank3
        counts = Counter(
            re.findall(r"\] (Load weight begin|Load weight end|KV Cache is allocated|Memory pool end)", rank3)
        )
        assert counts == {
            "Load weight begin": 2,
            "Load weight end": 2,
            "KV Cache is allocated": 2,
            "Memory pool end": 2,
        }
        assert all(line.startswith("[2025-11-29 ") and " TP3] " in line for line in rank3.splitlines() if line)


@pytest.mark.parametrize(
    ("fmt", "old", "new"),
    [
        ("0.5.9", "Init torch distributed begin.", "Init parallel begin."),
        ("0.5.9", "Capture cuda graph begin. This can take up to several minutes.", "CUDA graph begin"),
        ("0.5.9", "Using KV cache dtype: torch.bfloat16", "KV Cache is allocated. dtype:"),
        ("0.5.23", "Memory baseline taken.", "Init torch distributed"),
        ("0.5.23", "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4", "cuda graph bs ["),
        ("0.5.23", "Capturing prefill shape (num_tokens=2048", "Using KV cache dtype"),
    ],
)
def test_version_spellings(fmt: str, old: str, new: str):
    text = _text(fmt, 0, shards=2)
    assert old in text and new not in text


def test_no_speculative_means_no_draft():
    text = _text("0.5.23", 0, shards=2, speculative=None)
    assert "Eagle" not in text and "draft" not in text and "Capture target decode CUDA graph begin" in text
    assert "max_running_requests=1024" in text


def test_faults_end_the_script_where_they_strike():
    hang = rank_steps(SimParams(log="-", port=1, t0=T0, shards=10, fault="hang-weights"), 0)
    text = scheduled_text(hang, 10.0)
    assert hang[-1].action == "hang" and "| 3/10 [" in text[-200:] and "Load weight end" not in text
    oom = rank_steps(SimParams(log="-", port=1, t0=T0, fault="oom-capture"), 3)
    assert oom[-1].action == "raise" and "torch.OutOfMemoryError: CUDA out of memory." in oom[-1].text
    crash = rank_steps(SimParams(log="-", port=1, t0=T0, fault="crash"), 3)
    assert crash[-1].action == "die"
    assert rank_steps(SimParams(log="-", port=1, t0=T0, fault="crash"), 2)[-1].action == "ready"


# ---------------------------------------------------------------------- the real log through the real parser


@pytest.mark.parametrize("fmt", ["0.5.9", "0.5.23"])
def test_sim_log_parses_into_the_expected_startup(tmp_path: Path, fmt: str, sim: Sims):
    from tui.core.events import BarProgress, Milestone, ServerArgs
    from tui.core.logparse import LogParser

    server = sim(tmp_path, fmt=fmt, speed=250.0, shards=16)
    try:
        data = wait_for_log(server, b"The server is fired up and ready to roll!")
    finally:
        server.stop()
    if fmt == "0.5.9":
        assert b"server_args=ServerArgs(model_path='meta-llama/Llama-3.3-70B-Instruct'" in data
    else:
        assert b"server_args={'model_path': 'meta-llama/Llama-3.3-70B-Instruct'" in data
    parser = LogParser()
    events = []
    for i in range(0, len(data), 1000):  # chunks cut anywhere, as a tail delivers them
        events += parser.feed(data[i : i + 1000])
    events += parser.flush()
    args = [e for e in events if isinstance(e, ServerArgs)]
    assert len(args) == 1 and args[0].tp_size == 8 and args[0].speculative == "EAGLE3"
    kinds = Counter((e.kind, e.draft) for e in events if isinstance(e, Milestone))
    for kind in ("load_begin", "load_end", "kv_alloc", "mem_pool_end"):
        lines = [ln[:160] for ln in data.decode(errors="replace").splitlines() if kind.split("_")[0] in ln.lower()]
        assert (kinds[(kind, False)], kinds[(kind, True)]) == (8, 8), (kind, str(server.log), lines)
    assert kinds[("init_begin", False)] >= 8 and kinds[("max_tokens", False)] == 1
    for kind in ("uvicorn_started", "uvicorn_running", "fired_up"):
        assert kinds[(kind, False)] == 1, kind
    weights = [e for e in events if isinstance(e, BarProgress) and e.bar == "weights"]
    done = [e.done for e in weights]  # frames that arrive together may be reported once, as their last
    assert done == sorted(done) and done[-1] == 16 and len(set(done)) >= 8 and {e.total for e in weights} == {16}
    assert {e.rank for e in weights} <= {"TP0", None}
    assert any(e.bar == "draft_weights" for e in events if isinstance(e, BarProgress))
    capture = [e for e in events if isinstance(e, BarProgress) and e.bar == "capture"]
    assert {e.total for e in capture} == ({23, 42} if fmt == "0.5.23" else {23})  # prefill shapes, batch sizes
    assert all(e.rank in ("TP0", None) for e in capture)


def test_replay_of_a_sim_log_ends_ready(tmp_path: Path, sim: Sims):
    import time

    from tui.core import report
    from tui.core.logparse import LogParser
    from tui.core.readiness import reduce
    from tui.core.state import Readiness

    server = sim(tmp_path, speed=500.0, shards=8)
    try:
        wait_for_log(server, b"fired up and ready to roll")
        from tests.helpers.sim import http_post

        http_post(server.port, "/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 200}})
        data = wait_for_log(server, b"Decode batch")
    finally:
        server.stop()
    parser, state = LogParser(), Readiness()
    for event in parser.feed(data) + parser.flush():
        state = reduce(state, event, time.time())
    result = report.to_json(state)
    assert result["phase"] in ("ready", "serving")
    assert result["shards"] == {"done": 8, "total": 8} and result["tp_size"] == 8
    assert result["error"] is None and result["decode"]["accept_len"] >= 1.0


def test_wait_on_a_0523_sim_reaches_ready_through_piecewise_capture_and_deepgemm_jit(
    tmp_path: Path, sim: Sims, cli: Cli
):
    """`sglang-tui wait local` on `simulate --format 0.5.23`: ready, after the piecewise capture and DeepGEMM JIT
    that the log shows before "fired up"; the same log replayed holds both steps complete."""
    import json

    from tui.commands.replay import replay_file

    server = sim(tmp_path, fmt="0.5.23", speed=150.0, tp=2, shards=4)
    try:
        proc = cli(
            "wait",
            "local",
            "--log",
            str(server.log),
            "--port",
            str(server.port),
            "--sim-gpus",
            str(server.gpu_state),
            "--timeout",
            "90",
            "--json",
            timeout=120,
        )
        data = server.log.read_bytes()
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    states = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert states[-1]["phase"] == "ready" and states[-1]["error"] is None
    assert "cuda_graph" in [span["phase"] for span in states[-1]["timeline"]]
    ready_at = data.index(b"The server is fired up and ready to roll!")
    for needle in (b"Entering DeepGEMM JIT Pre-Compile session", b"Try DeepGEMM JIT Compiling for <", b"DeepGEMM warmup:",
                   b"Capture piecewise CUDA graph begin", b"Compiling num tokens (num_tokens=",
                   b"Capturing num tokens (num_tokens=", b"Capture piecewise CUDA graph end"):  # fmt: skip
        assert 0 <= data.find(needle) < ready_at, needle
    state = replay_file(str(server.log))
    assert state.jit_kernels == 2 * 3 and not state.jit_active  # each rank compiles each of 3 kernel shapes
    assert state.piecewise is not None and state.piecewise.done == state.piecewise.total == 12


def test_main_format_spellings():
    """`--format main`: 0.5.23's lines and SGLang main's newest shapes (sglang-startup.md §12)."""
    text = _text("main", 0, shards=2)
    for needle in ("Tree cache initialized: source=default impl=RadixCache", "Capture draft extend cuda graph begin (step 2)",
                   "Capture draft decode cuda graph begin (step 3)", "Registering 4128 cuda graph addresses",
                   "Capture piecewise CUDA graph begin"):  # fmt: skip
        assert needle in text, needle
    assert "(step " not in _text("0.5.23", 0, shards=2) and "Tree cache" not in _text("0.5.23", 0, shards=2)
    ends = [_capture_end(_text("main", rank, shards=2, tp=4)) for rank in range(4)]
    assert ends == sorted(ends) and ends[0] < ends[-1]  # ranks end the regular capture at different times


def _capture_end(text: str) -> str:
    return [ln for ln in text.splitlines() if "Capture target verify CUDA graph end" in ln][0][1:20]


def test_wait_on_a_main_sim_names_every_new_phase_and_cross_checks_the_timings(tmp_path: Path, sim: Sims, cli: Cli):
    """`sglang-tui wait local` on `simulate --format main`: ready; the replayed log holds each new line's kind and
    SGLang's own startup timings map, cross-checked with the phases timed from the log."""
    import json

    from tui.commands.replay import replay_file
    from tui.core.events import Milestone
    from tui.core.logparse import LogParser
    from tui.core.report import format_report

    server = sim(tmp_path, fmt="main", speed=150.0, tp=2, shards=4)
    try:
        proc = cli("wait", "local", "--log", str(server.log), "--port", str(server.port), "--sim-gpus",
                   str(server.gpu_state), "--timeout", "90", "--json", timeout=120)  # fmt: skip
        data = server.log.read_bytes()
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    states = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert states[-1]["phase"] == "ready" and states[-1]["error"] is None
    assert [p for p in ("init", "loading_weights", "kv_cache", "cuda_graph", "warmup", "ready")
            if p in [span["phase"] for span in states[-1]["timeline"]]] == [
        "init", "loading_weights", "kv_cache", "cuda_graph", "warmup", "ready"]  # fmt: skip
    parser = LogParser()
    events = parser.feed(data) + parser.flush()
    milestones = [e for e in events if isinstance(e, Milestone)]
    assert any(m.kind == "kv_profile" and m.get("tree_cache") == "RadixCache" for m in milestones)
    steps = [m for m in milestones if m.kind == "graph_begin" and m.draft and "(step " in m.line]
    assert {m.get("what") for m in steps} == {"draft decode", "draft extend"} and len(steps) == 6
    (timings,) = [m for m in milestones if m.kind == "startup_timings"]
    assert timings.get("cuda_graph.target_verify") and timings.get("cuda_graph_total")
    state = replay_file(str(server.log))
    assert dict(state.startup_timings)["load_weight"] > 0 and state.piecewise is not None
    assert "sglang: " in format_report(state)  # SGLang's own figures held against the log's phases
