"""The simulator as a whole: real processes, a real log file, real HTTP, published GPU memory.

One simulated launch per module is watched from its first byte by a background observer (port, /health,
/v1/models, GPU files), and the tests assert on what it saw; the rest of the tests use that launch once ready.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Sims, Spawner
from tests.helpers.sim import SimServer, gpu_holders, group_pids, http_get, http_post, wait_for_log

GIB = 2**30


@dataclass
class Observation:
    refused_before_bind: int = 0  # connects refused while the log had not reached uvicorn
    connected_before_bind: list[str] = field(default_factory=list)  # must stay empty
    health: list[tuple[int, bool]] = field(default_factory=list)  # (status, "fired up" in log after it)
    models_while_starting: list[int] = field(default_factory=list)  # /v1/models statuses while /health was 503
    gpu: list[dict[int, tuple[int, str]]] = field(default_factory=list)  # pid -> (used, name) per snapshot


def _read_gpu(root: Path) -> dict[int, tuple[int, str]]:
    snap = {}
    for path in root.glob("proc-*.json"):
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        snap[int(entry["pid"])] = (int(entry["used"]), str(entry["name"]))
    return snap


def _observe(sim: SimServer, obs: Observation, stop: threading.Event) -> None:
    last_gpu: dict[int, tuple[int, str]] = {}
    while not stop.is_set():
        before = sim.log.read_bytes() if sim.log.exists() else b""
        snap = _read_gpu(sim.gpu_state) if sim.gpu_state.exists() else {}
        if snap and snap != last_gpu:
            obs.gpu.append(snap)
            last_gpu = snap
        try:
            with socket.create_connection(("127.0.0.1", sim.port), timeout=1):
                after = sim.log.read_bytes()
                if b"Application startup complete." not in after:
                    obs.connected_before_bind.append(after[-300:].decode(errors="replace"))
        except ConnectionRefusedError:
            if b"max_total_num_tokens=" not in before:
                obs.refused_before_bind += 1
            time.sleep(0.005)
            continue
        status, _ = http_get(sim.port, "/health")
        obs.health.append((status, b"fired up and ready to roll" in sim.log.read_bytes()))
        if status == 503:
            obs.models_while_starting.append(http_get(sim.port, "/v1/models")[0])
        elif status == 200:
            return


@pytest.fixture(scope="module")
def launch(module_sim: Sims):
    sim = module_sim(speed=400.0)
    obs = Observation()
    stop = threading.Event()
    watcher = threading.Thread(target=_observe, args=(sim, obs, stop), daemon=True)
    watcher.start()
    watcher.join(40)
    stop.set()
    return sim, obs


def test_nothing_listens_until_uvicorn(launch):
    sim, obs = launch
    assert obs.refused_before_bind > 5, "the observer never saw the port closed during loading"
    assert obs.connected_before_bind == []


def test_health_is_503_until_warmup_then_200_and_models_answer_before(launch):
    sim, obs = launch
    statuses = [s for s, _ in obs.health]
    assert 503 in statuses, statuses
    assert statuses[-1] == 200
    assert all(fired for status, fired in obs.health if status == 200)
    assert obs.models_while_starting and set(obs.models_while_starting) == {200}
    status, _ = http_get(sim.port, "/health")
    assert status == 200


def test_process_tree_titled_like_sglang(launch):
    sim, _ = launch
    assert os.getpgid(sim.pid) == sim.pid and os.getsid(sim.pid) == sim.pid
    titles = {}
    for pid in group_pids(sim.pid):
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        titles[cmdline.split(b"\0")[0].decode()] = pid
        if pid != sim.pid:
            assert int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) == sim.pid
    expected = {f"sglang::scheduler_TP{k}" for k in range(8)} | {"sglang::detokenizer"}
    assert expected <= set(titles)
    assert Path(f"/proc/{titles['sglang::scheduler_TP3']}/cmdline").read_bytes() == b"sglang::scheduler_TP3\0"
    assert Path(f"/proc/{titles['sglang::scheduler_TP3']}/comm").read_text().strip() == "sglang::schedul"


def test_gpu_memory_follows_the_phases(launch):
    sim, obs = launch
    devices = json.loads((sim.gpu_state / "devices.json").read_text())["gpus"]
    assert [d["index"] for d in devices] == list(range(8))
    assert {d["total"] for d in devices} == {143771 * 2**20}
    assert len({d["uuid"] for d in devices}) == 8
    final = obs.gpu[-1]
    rank_pids = {name: pid for pid, (_, name) in final.items()}
    assert set(rank_pids) == {f"sglang::scheduler_TP{k}" for k in range(8)}
    for k in range(8):
        entry = json.loads((sim.gpu_state / f"proc-{rank_pids[f'sglang::scheduler_TP{k}']}.json").read_text())
        assert entry["gpu"] == k
    tp0 = [
        snap[rank_pids["sglang::scheduler_TP0"]][0] for snap in obs.gpu if rank_pids["sglang::scheduler_TP0"] in snap
    ]
    assert tp0 == sorted(tp0), "memory only grows during a startup"
    loading = [u for u in tp0 if 2 * GIB < u < 20 * GIB]
    assert len(set(loading)) >= 5, "weights grow shard by shard"
    jumps = [b - a for a, b in zip(tp0, tp0[1:], strict=False)]
    assert max(jumps) > 50 * GIB, "the KV cache is allocated at once"
    assert 110 * GIB < tp0[-1] < 135 * GIB


def test_generate_streams_tokens_and_logs_decode_lines(launch):
    sim, _ = launch
    before = sim.log.read_bytes()
    status, body = http_post(sim.port, "/generate", {"text": "Hello", "sampling_params": {"max_new_tokens": 300}})
    assert status == 200
    reply = json.loads(body)
    assert reply["meta_info"]["completion_tokens"] == 300 and reply["text"].strip()
    log = wait_for_log(sim, b"Decode batch", timeout=5)[len(before) :]
    decode = [ln for ln in log.split(b"\n") if b"Decode batch" in ln]
    assert decode and all(b"accept len: " in ln and b"gen throughput (token/s): " in ln for ln in decode)
    assert b'"POST /generate HTTP/1.1" 200 OK' in log and b"Prefill batch, #new-seq: 1" in log


def test_chat_completions_stream_as_server_sent_events(launch):
    import http.client

    sim, _ = launch
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=10)
    body = {"model": "x", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 40, "stream": True}
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"content-type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("content-type") == "text/event-stream"
    events = [ln for ln in resp.read().split(b"\n\n") if ln.startswith(b"data: ")]
    conn.close()
    assert events[-1] == b"data: [DONE]"
    chunks = [json.loads(e[6:]) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"]["content"] for c in chunks)
    assert len(text.split()) == 40 and chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_other_endpoints(launch):
    sim, _ = launch
    status, body = http_get(sim.port, "/v1/models")
    assert status == 200 and json.loads(body)["data"][0]["id"] == "meta-llama/Llama-3.3-70B-Instruct"
    for path in ("/model_info", "/get_model_info"):
        status, body = http_get(sim.port, path)
        assert status == 200 and json.loads(body)["is_generation"] is True
    status, body = http_get(sim.port, "/get_server_info")
    info = json.loads(body)
    assert status == 200 and info["tp_size"] == 8 and info["max_total_num_tokens"] > 1_000_000
    assert http_get(sim.port, "/nope")[0] == 404
    assert http_get(sim.port, "/generate")[0] == 405
    assert http_post(sim.port, "/generate", {"sampling_params": "bad"})[0] == 400


def test_sigterm_after_ready_drains_and_leaves_nothing(tmp_path: Path, sim: Sims):
    server = sim(tmp_path, speed=500.0, tp=2, shards=4)
    wait_for_log(server, b"fired up and ready to roll")
    os.kill(server.pid, signal.SIGTERM)
    assert server.wait(10) == 0
    log = server.log.read_bytes()
    assert b"SIGTERM received. signum=None frame=None. Draining requests and shutting down..." in log
    assert b"INFO:     Finished server process" in log
    assert group_pids(server.pid) == []


def test_sigterm_to_the_group_during_loading_leaves_nothing(tmp_path: Path, sim: Sims):
    server = sim(tmp_path, speed=20.0, tp=4)
    wait_for_log(server, b"Load weight begin")
    os.killpg(server.pid, signal.SIGTERM)
    assert server.wait(10) == -signal.SIGTERM
    deadline = time.monotonic() + 5
    while group_pids(server.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert group_pids(server.pid) == []
    assert gpu_holders(server.gpu_state) == {}  # every entry's process gone (or a zombie), whoever has its pid now


def test_launch_command_runs_from_sh(tmp_path: Path, sim: Sims, spawn: Spawner):
    import subprocess

    server = sim(tmp_path, speed=500.0, tp=1, shards=2)
    server.stop()
    out = tmp_path / "again.log"
    cmd = server.launch_command().replace(str(server.log), str(out))
    spawn(["sh", "-c", cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # its group is killed at teardown
    deadline = time.monotonic() + 20
    while b"fired up" not in (out.read_bytes() if out.exists() else b"") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert b"The server is fired up and ready to roll!" in out.read_bytes()


def test_bad_options_get_one_line(tmp_path: Path, cli: Cli):
    for extra, word in ((["--format", "0.4.1"], "--format"), (["--speculative", "MEDUSA"], "--speculative")):
        done = cli("simulate", "--log", tmp_path / "x.log", "--port", "1", *extra, timeout=20)
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and word in lines[0] and "Traceback" not in done.stderr
