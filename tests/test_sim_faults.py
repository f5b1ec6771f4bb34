"""Every injected fault produces SGLang's signature in the log and SGLang's exit behaviour."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.helpers.processes import Sims
from tests.helpers.sim import SimServer, group_pids, wait_for_log

SPEED = 500.0


def _exit(sim: SimServer, timeout: float = 20.0) -> int | None:
    code = sim.wait(timeout)
    deadline = time.monotonic() + 5
    while group_pids(sim.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return code


def _gone(sim: SimServer) -> None:
    assert group_pids(sim.pid) == [], "a process of the server outlived it"


@pytest.mark.parametrize("fmt", ["0.5.9", "0.5.23"])
def test_oom_during_capture_kills_the_tree(tmp_path: Path, fmt: str, sim: Sims):
    server = sim(tmp_path, fault="oom-capture", speed=SPEED, fmt=fmt, shards=8, tp=4)
    assert _exit(server) == -signal.SIGKILL  # kill_process_tree ends with the main process SIGKILLing itself
    _gone(server)
    log = server.log.read_text()
    exc = log.index("TP3] Scheduler hit an exception: Traceback (most recent call last):")
    oom = log.index("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate", exc)
    quit_ = log.index("Received sigquit from a child process. It usually means the child failed.", oom)
    assert "Exception: Capture cuda graph failed: CUDA out of memory" in log[oom:quit_]
    assert ("kill_process_tree called:" in log[quit_:]) == (fmt == "0.5.23")
    assert "Load weight end" in log and "fired up" not in log and "Uvicorn running" not in log


def test_oom_while_loading(tmp_path: Path, sim: Sims):
    server = sim(tmp_path, fault="oom-load", speed=SPEED, shards=20, tp=4)
    assert _exit(server) == -signal.SIGKILL
    _gone(server)
    log = server.log.read_text()
    assert "weight_utils.py" in log and "torch.OutOfMemoryError: CUDA out of memory." in log
    assert "Received sigquit from a child process." in log and "KV Cache is allocated" not in log


@pytest.mark.parametrize(("fmt", "message"), [
    ("0.5.9", "RuntimeError: Rank 3 scheduler is dead. Please check if there are relevant logs."),
    ("0.5.23", "RuntimeError: Rank 3 scheduler died during initialization (exit code: -9)."),
])  # fmt: skip
def test_crash_of_a_rank_is_reported_by_the_launcher(tmp_path: Path, fmt: str, message: str, sim: Sims):
    server = sim(tmp_path, fault="crash", speed=SPEED, fmt=fmt, shards=10, tp=4)
    assert _exit(server) == 1
    _gone(server)
    log = server.log.read_text()
    assert message in log and "Scheduler hit an exception" not in log


def test_nccl_timeout_after_a_silent_init(tmp_path: Path, sim: Sims):
    server = sim(tmp_path, fault="nccl-timeout", speed=SPEED, tp=4)
    wait_for_log(server, b"Init parallel begin.")
    time.sleep(0.3)  # 150 simulated seconds: still inside the 600 s timeout
    silent = server.log.read_text()
    assert "Init parallel ends" not in silent and "Scheduler hit an exception" not in silent
    assert _exit(server) == -signal.SIGKILL
    _gone(server)
    log = server.log.read_text()
    assert "torch.distributed.DistBackendError:" in log and "wait timeout after 600000ms" in log
    assert "Received sigquit from a child process." in log


@pytest.mark.parametrize("fault", ["hang-weights", "hang-capture"])
def test_hangs_keep_processes_alive_and_the_log_silent(tmp_path: Path, fault: str, sim: Sims):
    server = sim(tmp_path, fault=fault, speed=SPEED, shards=20, tp=4)
    try:
        needle = b"Multi-thread loading shards" if fault == "hang-weights" else b"Capturing batches (bs="
        wait_for_log(server, needle)
        time.sleep(0.4)
        size = server.log.stat().st_size
        used = {p.name: p.read_text() for p in server.gpu_state.glob("proc-*.json")}
        time.sleep(0.4)  # 200 simulated seconds
        assert server.log.stat().st_size == size
        assert {p.name: p.read_text() for p in server.gpu_state.glob("proc-*.json")} == used
        assert server.alive() and len(group_pids(server.pid)) == 6  # main, 4 ranks, detokenizer
        log = server.log.read_text()
        if fault == "hang-weights":
            assert "7/20 [" in log and "8/20 [" not in log and "Load weight end" not in log
        else:
            assert "Capture target verify CUDA graph begin" in log and "Capture target verify CUDA graph end" not in log
    finally:
        server.stop()
    _gone(server)


def test_port_in_use_fault_fails_at_uvicorn_bind(tmp_path: Path, sim: Sims):
    server = sim(tmp_path, fault="port-in-use", speed=SPEED, shards=8, tp=2)
    assert _exit(server) == 3
    _gone(server)
    log = server.log.read_text()
    line = f"ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', {server.port}): address already in use"
    assert log.index("max_total_num_tokens=") < log.index("Application startup complete.") < log.index(line)
    assert "Uvicorn running" not in log


def test_a_real_listener_on_the_port_fails_the_same_way(tmp_path: Path, sim: Sims):
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        server = sim(tmp_path, speed=SPEED, shards=4, tp=1, port=blocker.getsockname()[1])
        try:
            assert _exit(server) == 3
            assert "address already in use" in server.log.read_text()
        finally:
            server.stop()


def test_warmup_failure_kills_the_tree(tmp_path: Path, sim: Sims):
    server = sim(tmp_path, fault="warmup-fail", speed=SPEED, shards=8, tp=2)
    assert _exit(server) == -signal.SIGKILL
    _gone(server)
    log = server.log.read_text()
    assert '"POST /generate HTTP/1.1" 500 Internal Server Error' in log
    assert "Initialization failed. warmup error: Traceback (most recent call last):" in log
    assert "AssertionError: <Response [500]>" in log and "fired up" not in log


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_orphans_outlive_the_main_process_and_keep_their_memory(tmp_path: Path, sim: Sims):
    server = sim(tmp_path, fault="orphans", speed=SPEED, tp=4, shards=8)
    wait_for_log(server, b"fired up and ready to roll")
    ranks = [
        p for p in group_pids(server.pid) if Path(f"/proc/{p}/cmdline").read_bytes().startswith(b"sglang::scheduler")
    ]
    assert len(ranks) == 4
    os.kill(server.pid, signal.SIGTERM)
    assert server.wait(10) == -signal.SIGTERM
    time.sleep(0.2)
    for pid in ranks:
        assert _ppid(pid) != server.pid, "re-parented once the main process is gone"
        assert os.getpgid(pid) == server.pid and os.getsid(pid) == server.pid
        assert f"SGLANG_TUI_RUN={server.run_id}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert (server.gpu_state / f"proc-{pid}.json").exists()
    os.killpg(server.pid, signal.SIGTERM)  # they ignore TERM, like schedulers stuck in GPU teardown
    time.sleep(0.2)
    assert sorted(group_pids(server.pid)) == sorted(ranks)
    os.killpg(server.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while group_pids(server.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    _gone(server)


def test_orphans_can_also_escape_the_session(tmp_path: Path, sim: Sims):
    server = sim(tmp_path, fault="orphans", speed=SPEED, tp=2, shards=4, env={"SGLANG_TUI_SIM_ORPHAN_SETSID": "1"})
    try:
        wait_for_log(server, b"fired up and ready to roll")
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(5)
        from tests.helpers.sim import _pids_with_marker

        deadline = time.monotonic() + 5  # the killed group takes a moment to die on a loaded machine
        while len(escaped := _pids_with_marker(server.run_id)) > 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(escaped) == 2 and all(os.getsid(p) != server.pid for p in escaped)
    finally:
        server.stop()
    from tests.helpers.sim import _pids_with_marker

    assert _pids_with_marker(server.run_id) == []


def _rank_pid(sim: SimServer, rank: int) -> int:
    for pid in group_pids(sim.pid):
        if Path(f"/proc/{pid}/cmdline").read_bytes() == f"sglang::scheduler_TP{rank}\0".encode():
            return pid
    raise AssertionError(f"no TP{rank}")


def test_a_rank_killed_while_serving_takes_the_server_down_in_0523(tmp_path: Path, sim: Sims):
    server = sim(tmp_path, speed=SPEED, tp=4, shards=4)
    wait_for_log(server, b"fired up and ready to roll")
    pid = _rank_pid(server, 3)
    os.kill(pid, signal.SIGKILL)
    assert _exit(server) == -signal.SIGKILL
    _gone(server)
    log = server.log.read_text()
    assert f"Subprocess scheduler_3 (pid={pid}) crashed with exit code -9. Triggering SIGQUIT for cleanup..." in log
    assert "SIGQUIT received. signum=None, frame=None. It usually means one child failed." in log


def test_a_rank_killed_while_serving_fails_health_in_059(tmp_path: Path, sim: Sims):
    from tests.helpers.sim import http_get

    server = sim(tmp_path, speed=SPEED, tp=4, shards=4, fmt="0.5.9")
    wait_for_log(server, b"fired up and ready to roll")
    os.kill(_rank_pid(server, 3), signal.SIGKILL)
    time.sleep(0.2)  # the launcher's 5 s poll
    assert server.alive()
    assert http_get(server.port, "/health")[0] == 503
    assert (
        "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds."
        in server.log.read_text()
    )
    assert http_get(server.port, "/v1/models")[0] == 200  # the HTTP server outlives the dead scheduler
