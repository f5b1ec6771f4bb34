"""`python -m tui replay LOGFILE [--json]` run as a subprocess on logs constructed from SGLang's format strings."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Spawner

ROOT = Path(__file__).resolve().parent.parent

SERVER_ARGS = (
    "[2025-11-29 10:00:02] server_args=ServerArgs(model_path='meta-llama/Llama-3.3-70B-Instruct', "
    "tokenizer_path='meta-llama/Llama-3.3-70B-Instruct', host='0.0.0.0', port=30000, tp_size=2, "
    "speculative_algorithm='EAGLE3', speculative_draft_model_path='lmsys/sglang-EAGLE3-LLaMA3.3-Instruct-70B')\n"
)


def both(ts: str, msg: str) -> str:
    return "".join(f"[2025-11-29 {ts} TP{r}] {msg}\n" for r in (0, 1))


def shard_bar(desc: str, total: int) -> str:
    """0.5.14+ multi-thread loader: `\\r` frames on one physical line, one `\\n` at close."""
    frames = [
        f"\r{desc}: {100 * n // total:3d}% Completed | {n}/{total} [00:{2 * n:02d}<00:10,  2.30s/it]"
        for n in range(total + 1)
    ]
    return "".join(frames) + frames[-1] + "\n"


def capture_bar(sizes: list[int], avail: float) -> str:
    total = len(sizes)
    frames = [f"\r  0%|          | 0/{total} [00:00<?, ?it/s]"]
    for n, bs in enumerate(sizes):
        frames.append(
            f"\rCapturing batches (bs={bs} avail_mem={avail:.2f} GB):  {100 * n // total:2d}%|#         | {n}/{total} [00:0{n}<00:03,  1.33it/s]"
        )
    frames.append(
        f"\rCapturing batches (bs={sizes[-1]} avail_mem={avail:.2f} GB): 100%|##########| {total}/{total} [00:04<00:00,  1.33it/s]"
    )
    return "".join(frames) + frames[-1] + "\n"


def startup_log(*, serve: bool = False) -> str:
    text = "[2025-11-29 10:00:00] Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.\n"
    text += SERVER_ARGS
    text += both("10:00:09", "Init torch distributed begin.")
    text += both("10:00:12", "Init torch distributed ends. elapsed=2.71 s, mem usage=1.02 GB")
    text += both("10:00:12", "Load weight begin. avail mem=138.05 GB")
    text += "[2025-11-29 10:00:13 TP0] Using model weights format ['*.safetensors']\n"
    text += shard_bar("Multi-thread loading shards", 4)
    text += both(
        "10:01:23", "Load weight end. elapsed=70.12 s, type=LlamaForCausalLM, avail mem=121.46 GB, mem usage=16.56 GB."
    )
    text += both("10:01:23", "Load weight begin. avail mem=121.46 GB")
    text += shard_bar("Multi-thread loading shards", 1)
    text += both(
        "10:01:25",
        "Load weight end. elapsed=1.31 s, type=LlamaForCausalLMEagle3, avail mem=120.86 GB, mem usage=0.60 GB.",
    )
    text += both(
        "10:01:26", "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 2490368, K size: 47.50 GB, V size: 47.50 GB"
    )
    text += both("10:01:26", "Memory pool end. avail mem=25.45 GB")
    text += both(
        "10:01:52", "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, avail mem=23.10 GB"
    )
    text += capture_bar([4, 3, 2, 1], 23.07)
    text += both(
        "10:02:10",
        "Capture target verify CUDA graph end. bs=[1, 2, 3, 4], elapsed=18.02 s, mem usage=1.68 GB, avail mem=21.42 GB.",
    )
    text += "[2025-11-29 10:02:10 TP0] Capture draft decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 3, 4], avail mem=21.39 GB\n"
    text += capture_bar([4, 3, 2, 1], 21.39)
    text += "[2025-11-29 10:02:18 TP0] Capture draft decode CUDA graph end. elapsed=7.88 s, mem usage=0.43 GB, avail mem=20.96 GB.\n"
    text += "[2025-11-29 10:02:24 TP0] max_total_num_tokens=2490368, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=48, context_len=131072, available_gpu_mem=20.65 GB\n"
    text += "[2025-11-29 10:02:26] INFO:     Started server process [3120455]\n"
    text += "[2025-11-29 10:02:26] INFO:     Waiting for application startup.\n"
    text += "[2025-11-29 10:02:26] INFO:     Application startup complete.\n"
    text += "[2025-11-29 10:02:26] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
    text += '[2025-11-29 10:02:27] INFO:     127.0.0.1:50312 - "GET /model_info HTTP/1.1" 200 OK\n'
    text += "[2025-11-29 10:02:28 TP0] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0\n"
    text += '[2025-11-29 10:02:29] INFO:     127.0.0.1:50320 - "POST /generate HTTP/1.1" 200 OK\n'
    text += "[2025-11-29 10:02:29] The server is fired up and ready to roll!\n"
    if serve:
        text += "[2025-11-29 10:05:03 TP0] Decode batch, #running-req: 4, #token: 2304, token usage: 0.00, accept len: 3.21, accept rate: 0.74, cuda graph: True, gen throughput (token/s): 598.31, #queue-req: 0\n"
    return text


OOM_LOG = (
    "[2025-11-29 10:00:02] server_args=ServerArgs(model_path='m', tp_size=2, port=30000)\n"
    + both("10:00:09", "Init torch distributed begin.")
    + both("10:00:12", "Load weight begin. avail mem=138.05 GB")
    + "[2025-11-29 10:01:02 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 3130, in run_scheduler_process\n'
    "    scheduler = Scheduler(\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 1 has a total capacity of 139.81 GiB of which 1.12 GiB is free.\n"
    "\n"
    "[2025-11-29 10:01:02] Received sigquit from a child process. It usually means the child failed.\n"
)


Replay = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def replay(cli: Cli) -> Replay:
    return lambda path, *extra: cli("replay", path, *extra, timeout=60)


@pytest.fixture
def replay_json(replay: Replay) -> Callable[[Path], dict[str, object]]:
    def run(path: Path) -> dict[str, object]:
        proc = replay(path, "--json")
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        result: dict[str, object] = json.loads(proc.stdout)
        return result

    return run


def write(tmp_path: Path, text: str, name: str = "server.log") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


# ------------------------------------------------------------------------------------------------ bad input


def one_clear_line(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sglang-tui replay: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in lines[0]


def test_missing_file(tmp_path: Path, replay) -> None:
    one_clear_line(replay(tmp_path / "nope.log"), "nope.log", "no such file")


def test_a_directory(tmp_path: Path, replay) -> None:
    one_clear_line(replay(tmp_path, "--json"), "is a directory")


def test_an_empty_file(tmp_path: Path, replay) -> None:
    one_clear_line(replay(write(tmp_path, "")), "is empty")


def test_a_binary_file(tmp_path: Path, replay) -> None:
    path = tmp_path / "core.bin"
    path.write_bytes(bytes(range(256)) * 64)
    one_clear_line(replay(path, "--json"), "binary")


def test_a_compressed_log_says_to_decompress(tmp_path: Path, replay) -> None:
    path = tmp_path / "server.log.gz"
    path.write_bytes(gzip.compress(startup_log().encode()))
    one_clear_line(replay(path), "binary", "decompress")


def test_text_that_is_not_an_sglang_log_is_replayed_as_nothing_seen(tmp_path: Path, replay_json) -> None:
    obj = replay_json(write(tmp_path, "hello\nthis is a shopping list\n"))
    assert obj["phase"] == "starting" and obj["timeline"] == [] and obj["error"] is None


# --------------------------------------------------------------------------------------------------- logs


def test_startup_to_ready_json(tmp_path: Path, replay_json) -> None:
    obj = replay_json(write(tmp_path, startup_log()))
    assert obj["phase"] == "ready"
    assert obj["shards"] == {"done": 4, "total": 4}  # the target's bar, not the draft's 1/1
    assert obj["tp_size"] == 2 and obj["speculative"] == "EAGLE3"
    assert obj["error"] is None and obj["decode"] is None
    timeline = obj["timeline"]
    assert isinstance(timeline, list)
    main = [(s["phase"], s["start"]) for s in timeline if s["model"] == "main"]
    assert main == [
        ("starting", "2025-11-29 10:00:02"),
        ("init", "2025-11-29 10:00:09"),
        ("loading_weights", "2025-11-29 10:00:12"),
        ("kv_cache", "2025-11-29 10:01:26"),
        ("cuda_graph", "2025-11-29 10:01:52"),
        ("warmup", "2025-11-29 10:02:26"),
        ("ready", "2025-11-29 10:02:29"),
    ]
    loading = next(s for s in timeline if s["phase"] == "loading_weights" and s["model"] == "main")
    assert loading["end"] == "2025-11-29 10:01:26" and loading["duration_s"] == 74.0
    drafts = {s["phase"] for s in timeline if s["model"] == "draft"}
    assert drafts == {"loading_weights", "cuda_graph"}
    ranks = obj["ranks"]
    assert isinstance(ranks, dict) and sorted(ranks) == ["TP0", "TP1"]
    assert ranks["TP1"]["avail_mem_gb"] is not None


def test_startup_then_decode_is_serving(tmp_path: Path, replay_json) -> None:
    obj = replay_json(write(tmp_path, startup_log(serve=True)))
    assert obj["phase"] == "serving"
    assert obj["decode"] == {"accept_len": 3.21, "gen_throughput": 598.31}


def test_text_report_has_the_timeline_and_final_state(tmp_path: Path, replay) -> None:
    proc = replay(write(tmp_path, startup_log()))
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["PHASE", "MODEL", "START", "END", "DURATION"]
    assert any(line.split()[0] == "loading_weights" and line.endswith("1m14s") for line in lines)
    assert "state: ready" in lines
    assert any(line.startswith("why:   ready: the log says fired up") for line in lines)


def test_failed_startup_keeps_the_root_cause_line(tmp_path: Path, replay, replay_json) -> None:
    obj = replay_json(write(tmp_path, OOM_LOG))
    assert obj["phase"] == "failed"
    error = obj["error"]
    assert isinstance(error, dict) and error["kind"] == "oom"
    assert str(error["line"]).startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB.")
    proc = replay(write(tmp_path, OOM_LOG))
    assert "cause: oom (root cause)" in proc.stdout and "line:  torch.OutOfMemoryError" in proc.stdout


def test_a_relaunch_in_the_same_log_shows_the_last_launch(tmp_path: Path, replay_json) -> None:
    obj = replay_json(write(tmp_path, OOM_LOG + startup_log()))
    assert obj["phase"] == "ready" and obj["error"] is None and obj["tp_size"] == 2
    assert [s["phase"] for s in obj["timeline"] if s["model"] == "main"][0] == "starting"


def test_log_attached_mid_run_is_serving(tmp_path: Path, replay_json) -> None:
    text = "".join(
        f"[2025-11-29 10:27:5{i} TP0] Decode batch, #running-req: 1, #token: {100 + i}, token usage: 0.00, "
        f"accept len: 1.{80 + i}, accept rate: 0.45, cuda graph: True, gen throughput (token/s): 16{i}.50, #queue-req: 0, \n"
        for i in range(3)
    )
    obj = replay_json(write(tmp_path, text))
    assert obj["phase"] == "serving" and obj["speculative"] == "unknown" and obj["tp_size"] is None
    assert obj["decode"] == {"accept_len": 1.82, "gen_throughput": 162.5}


def test_a_log_larger_than_one_chunk(tmp_path: Path, replay_json) -> None:
    filler = "".join(
        f"[2025-11-29 10:00:05] Attention backend not specified. Use fa3 backend by default. ({i:06d})\n"
        for i in range(16000)
    )
    text = startup_log().replace(SERVER_ARGS, SERVER_ARGS + filler)
    assert len(text) > 1 << 20
    obj = replay_json(write(tmp_path, text))
    assert obj["phase"] == "ready" and obj["shards"] == {"done": 4, "total": 4}


def test_ansi_colours_and_utf8_bars_are_text_not_binary(tmp_path: Path, replay_json) -> None:
    coloured = startup_log().replace("Load weight begin.", "\x1b[32mLoad weight begin.\x1b[0m")
    coloured = coloured.replace("|#         |", "|\u2588\u258c        |")  # tqdm's unicode capture bar
    obj = replay_json(write(tmp_path, coloured))
    assert obj["phase"] == "ready" and obj["shards"] == {"done": 4, "total": 4}
    assert any(s["phase"] == "cuda_graph" for s in obj["timeline"])


def test_output_into_a_closed_pipe_is_not_an_error(tmp_path: Path, spawn: Spawner) -> None:
    path = write(tmp_path, startup_log())
    proc = spawn.run(
        ["bash", "-c", f"{sys.executable} -m tui replay {path} | head -c 10 > /dev/null; echo ${{PIPESTATUS[0]}}"],
        cwd=ROOT,
    )
    assert proc.stdout.strip() == "0" and "Traceback" not in proc.stderr
