"""`sglang-tui wait` when the log path stops being the file the server writes (issue 17 cases 5, 6), or never
was one: the simulator writing its log as its stdout (as `CMD > LOG` does), the log moved or deleted
mid-load, a missing log. Real processes, real HTTP; locally and over a real sshd."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.sim import ROOT, start_sim, wait_for_log
from tests.helpers.sshd import Sshd, free_port


def wait_cmd(sshd: Sshd | None, *args: str) -> list[str]:
    target = ["127.0.0.1", *sshd.ssh_args()] if sshd is not None else ["local"]
    return [sys.executable, "-m", "tui", "wait", *target, *args]


def wait_while(sshd: Sshd | None, tmp_path: Path, change) -> tuple[int, str, list[dict]]:
    """Run wait on a loading simulator; once wait reports the load, apply `change` to the log."""
    sim = start_sim(tmp_path, speed=10.0, tp=2, shards=8)
    try:
        proc = subprocess.Popen(
            wait_cmd(
                sshd,
                "--log",
                str(sim.log),
                "--port",
                str(sim.port),
                "--sim-gpus",
                str(sim.gpu_state),
                "--timeout",
                "90",
                "--json",
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert proc.stdout is not None
        states = []
        for line in proc.stdout:
            states.append(json.loads(line))
            if states[-1]["phase"] == "loading_weights":
                change(sim.log)
                break
        out, err = proc.communicate(timeout=120)
        states += [json.loads(line) for line in out.splitlines() if line.strip()]
        return proc.returncode, err, states
    finally:
        sim.stop()


@pytest.mark.parametrize("via", ["local", "ssh"])
def test_mv_rotation_mid_load_follows_the_servers_file_to_ready(
    via: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    sshd = request.getfixturevalue("sshd") if via == "ssh" else None
    code, err, states = wait_while(sshd, tmp_path, lambda log: os.rename(log, f"{log}.1"))
    assert code == 0, err[-3000:]
    assert states[-1]["phase"] == "ready" and "failed" not in [s["phase"] for s in states]
    assert f"log rotated: the server still writes to {tmp_path / 'sim.log.1'}; following it" in err
    last = err.strip().splitlines()[-1]
    # Ready on this server's /health 200: with the log's fired-up line, or (when /health answers first) on
    # /model_info naming the log's model; either way the followed file carried the startup past loading.
    assert "ready:" in last and "/health answers 200" in last, last
    assert {"kv_cache", "cuda_graph", "warmup"} & {s["phase"] for s in states}


def test_log_deleted_mid_load_is_named_and_followed_to_ready(tmp_path: Path) -> None:
    code, err, states = wait_while(None, tmp_path, lambda log: os.unlink(log))
    assert code == 0, err[-3000:]
    assert "log deleted; following the server's stdout (pid " in err
    assert states[-1]["phase"] == "ready" and states[-1]["shards"] == {"done": 8, "total": 8}


def test_missing_log_is_named_in_the_last_line(tmp_path: Path) -> None:
    log = tmp_path / "typo.log"
    run = subprocess.run(
        wait_cmd(None, "--log", str(log), "--port", str(free_port()), "--timeout", "3"),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    last = run.stderr.strip().splitlines()[-1]
    assert run.returncode == 2 and last.endswith(f"waiting for the first log line: log file missing: {log}"), last


def test_a_directory_as_log_is_named_in_the_last_line(tmp_path: Path) -> None:
    run = subprocess.run(
        wait_cmd(None, "--log", str(tmp_path), "--port", str(free_port()), "--timeout", "3"),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    last = run.stderr.strip().splitlines()[-1]
    assert run.returncode == 2 and f"log path is a directory, not a file: {tmp_path}" in last, last


def test_the_simulator_writes_its_log_as_its_stdout(tmp_path: Path) -> None:
    """What makes the rotation tests real: the server's fd 1 is the log file (a `mv` leaves it writing there)."""
    sim = start_sim(tmp_path, speed=50.0, tp=2, shards=8)
    try:
        wait_for_log(sim, b"server_args")
        assert os.readlink(f"/proc/{sim.pid}/fd/1") == str(sim.log)
        assert os.stat(f"/proc/{sim.pid}/fd/1").st_ino == sim.log.stat().st_ino
    finally:
        sim.stop()
