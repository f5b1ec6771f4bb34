"""`sglang-tui wait` when the log path stops being the file the server writes (issue 17 cases 5, 6), or never
was one: the simulator writing its log as its stdout (as `CMD > LOG` does), the log moved or deleted
mid-load, a missing log. Real processes, real HTTP; locally and over a real sshd."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Sims
from tests.helpers.sim import wait_for_log
from tests.helpers.sshd import Sshd, free_port
from tests.helpers.verdicts import Outcome, follow_wait, paused


def wait_while(cli: Cli, sim: Sims, sshd: Sshd | None, change: Callable[[Path], object],
               noticed: str) -> tuple[Outcome, Path]:  # fmt: skip
    """Run wait on a loading simulator; once wait reports the load, apply `change` to the log. The simulator is
    paused from its load's first line until the wait's state names the change (`noticed`); a fast clock after."""
    server = sim(speed=100.0, tp=2, shards=8, extra=("--slow", "weights=3"))
    try:
        wait = follow_wait(cli, sshd, "--log", str(server.log), "--port", str(server.port), "--sim-gpus",
                           str(server.gpu_state), "--timeout", "90")  # fmt: skip
        wait_for_log(server, b"Load weight begin")
        with paused(server):
            wait.until(lambda state: state["phase"] == "loading_weights")
            change(server.log)
            wait.until(lambda state: noticed in state["reason"])
        return wait.finish(), server.log
    finally:
        server.stop()


@pytest.mark.parametrize("via", ["local", "ssh"])
def test_mv_rotation_mid_load_follows_the_servers_file_to_ready(via: str, cli: Cli, sim: Sims,
                                                                request: pytest.FixtureRequest) -> None:  # fmt: skip
    sshd = request.getfixturevalue("sshd") if via == "ssh" else None
    out, log = wait_while(cli, sim, sshd, lambda log: os.rename(log, f"{log}.1"), "following it")
    states, err = out.states(), out.stderr
    assert out.code == 0, err[-3000:]
    assert states[-1]["phase"] == "ready" and "failed" not in [s["phase"] for s in states]
    assert f"log rotated: the server still writes to {log}.1; following it" in err
    last = err.strip().splitlines()[-1]
    # Ready on this server's /health 200: with the log's fired-up line, or (when /health answers first) on
    # /model_info naming the log's model; either way the followed file carried the startup past loading.
    assert "ready:" in last and "/health answers 200" in last, last
    assert {"kv_cache", "cuda_graph", "warmup"} & {s["phase"] for s in states}


def test_log_deleted_mid_load_is_named_and_followed_to_ready(cli: Cli, sim: Sims) -> None:
    out, _ = wait_while(cli, sim, None, lambda log: os.unlink(log), "following the server's stdout")
    assert out.code == 0, out.stderr[-3000:]
    assert "log deleted; following the server's stdout (pid " in out.stderr
    final = out.last_json()
    assert final["phase"] == "ready" and final["shards"] == {"done": 8, "total": 8}


def test_missing_log_is_named_in_the_first_line_and_ends_the_wait_after_the_grace(tmp_path: Path, cli: Cli) -> None:
    log, port = tmp_path / "typo.log", free_port()
    run = cli("wait", "local", "--log", log, "--port", str(port), "--missing-log-grace", "1", "--timeout", "60",
              timeout=60)  # fmt: skip
    lines = run.stderr.strip().splitlines()
    missing = f"log file missing: {log}; nothing listens on port {port}"
    assert run.returncode == 6 and missing in lines[0], run.stderr
    assert lines[-1].startswith(f"sglang-tui wait: nothing found: {missing} (for "), lines[-1]


def test_a_directory_as_log_is_named_in_the_last_line(tmp_path: Path, cli: Cli) -> None:
    # decided at the first look (a directory never becomes the log): the timeout only bounds a machine that hangs
    run = cli("wait", "local", "--log", tmp_path, "--port", str(free_port()), "--timeout", "60", timeout=90)
    last = run.stderr.strip().splitlines()[-1]
    assert run.returncode == 2 and f"log path is a directory, not a file: {tmp_path}" in last, last


def test_the_simulator_writes_its_log_as_its_stdout(sim: Sims) -> None:
    """What makes the rotation tests real: the server's fd 1 is the log file (a `mv` leaves it writing there)."""
    server = sim(speed=50.0, tp=2, shards=8)
    try:
        wait_for_log(server, b"server_args")
        assert os.readlink(f"/proc/{server.pid}/fd/1") == str(server.log)
        assert os.stat(f"/proc/{server.pid}/fd/1").st_ino == server.log.stat().st_ino
    finally:
        server.stop()
