"""`sglang-tui stop` exit codes, run as a real subprocess against real process trees (locally and over sshd)."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.pids import alive
from tests.helpers.processes import Cli, Spawner
from tests.helpers.sim import gpu_holders
from tests.helpers.sshd import free_port
from tui.commands.stop_report import report
from tui.core.events import ControlResult

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "tests" / "helpers" / "proctree.py"
GIB = 2**30


def server_pids(state: Path, skip: int) -> list[int]:
    return [pid for pid in gpu_holders(state) if pid != skip]


@pytest.fixture
def scene(tmp_path: Path, spawn: Spawner):
    """A bystander titled sglang::scheduler_TP0, and a hand-started server (with an orphan) writing its log."""
    state, log, port = tmp_path / "gpus", tmp_path / "server.log", free_port()
    bystander = spawn([sys.executable, TREE, "bystander", "--gpu-state", state], stdout=subprocess.DEVNULL)

    def start(*extra: str) -> subprocess.Popen[bytes]:
        words = [sys.executable, str(TREE), "--port", str(port), "--gpu-state", str(state), "--tp", "2", "--orphan"]
        with open(log, "wb") as out:
            proc = spawn(["sh", "-c", shlex.join([*words, *extra])], stdout=out, stderr=out)
        deadline = time.monotonic() + 15
        while len(server_pids(state, bystander.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        return proc

    yield {"state": state, "log": log, "port": port, "bystander": bystander, "start": start}
    # Only matters when a test failed midway: an orphan (its own session) holding sim memory; `spawn` kills the
    # trees' own sessions and the bystander.
    for pid in server_pids(state, bystander.pid):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def stop(cli: Cli) -> Callable[..., subprocess.CompletedProcess[str]]:
    return lambda *args: cli("stop", *args, "--remote-python", sys.executable, timeout=120)


def local_args(scene: dict, *extra: str) -> list[str]:
    return [
        "local",
        "--port",
        str(scene["port"]),
        "--log",
        str(scene["log"]),
        "--sim-gpus",
        str(scene["state"]),
        *extra,
    ]


def test_stop_exits_0_when_all_gone_and_memory_released(scene: dict, stop) -> None:
    main = scene["start"]()
    pids = server_pids(scene["state"], scene["bystander"].pid)
    run = stop(*local_args(scene))
    main.wait(timeout=10)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"stopped the server on local port {scene['port']}: exited on TERM")
    assert "GPU memory released" in run.stdout and run.stderr == ""
    assert [p for p in pids if alive(p)] == [] and alive(scene["bystander"].pid)


def test_force_kills_a_server_that_ignores_term(scene: dict, stop) -> None:
    main = scene["start"]("--ignore-term")
    pids = server_pids(scene["state"], scene["bystander"].pid)
    run = stop(*local_args(scene, "--force"))
    main.wait(timeout=10)
    assert run.returncode == 0 and run.stdout.startswith("killed the server on local"), run.stderr
    assert [p for p in pids if alive(p)] == [] and alive(scene["bystander"].pid)


def test_nothing_running_is_exit_6(scene: dict, stop) -> None:
    """Issue 17 case 8: nothing found is not "GPUs free" (it was exit 0 "nothing to stop")."""
    run = stop(*local_args(scene))
    assert run.returncode == 6 and run.stdout == ""
    assert f"no server found on port {scene['port']} / log {scene['log']}" in run.stderr


def test_wrong_port_is_exit_6_and_leaves_the_server_running(scene: dict, stop) -> None:
    main = scene["start"]()
    wrong = free_port()
    run = stop("local", "--port", str(wrong), "--sim-gpus", str(scene["state"]))
    assert run.returncode == 6 and f"no server found on port {wrong}" in run.stderr, run.stderr
    assert main.poll() is None


def test_a_port_outside_1_65535_is_one_line_and_exit_2(stop) -> None:
    """QA pass: `stop --port 0` (or 70000) looked for a server there and said "no server found" (exit 3)."""
    for port in ("0", "70000"):
        run = stop("local", "--port", port)
        assert run.returncode == 2, run.stderr
        said = f"--port: {port} is not a TCP port (1-65535) (try sglang-tui stop --help)"
        assert run.stderr == f"sglang-tui stop: {said}\n" and run.stdout == ""


def test_unconfirmed_gpu_memory_is_exit_1(scene: dict, tmp_path: Path, stop) -> None:
    main = scene["start"]()
    run = stop(
        "local", "--port", str(scene["port"]), "--log", str(scene["log"]), "--sim-gpus", str(tmp_path / "nowhere")
    )
    main.wait(timeout=10)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.startswith("NOT stopped (local port") and "GPU memory not confirmed" in run.stderr
    assert "Traceback" not in run.stderr


def test_stop_over_ssh(scene: dict, sshd, stop) -> None:
    main = scene["start"]()
    pids = server_pids(scene["state"], scene["bystander"].pid)
    run = stop(
        "testhost",
        "--ssh-config",
        str(sshd.ssh_config),
        "--port",
        str(scene["port"]),
        "--log",
        str(scene["log"]),
        "--sim-gpus",
        str(scene["state"]),
    )
    main.wait(timeout=10)
    assert run.returncode == 0, run.stderr
    assert [p for p in pids if alive(p)] == [] and alive(scene["bystander"].pid)


def test_cannot_connect_is_exit_4(sshd, stop) -> None:
    refused = stop(
        "127.0.0.1", "--ssh-port", str(free_port()), "--port", "30000", "--known-hosts", str(sshd.known_hosts)
    )
    assert refused.returncode == 4 and refused.stderr.startswith("sglang-tui stop: cannot connect to 127.0.0.1")
    wrong_key = stop(
        "127.0.0.1",
        "--ssh-port",
        str(sshd.port),
        "--user",
        sshd.user,
        "--identity",
        str(sshd.wrong_identity),
        "--known-hosts",
        str(sshd.known_hosts),
        "--port",
        "30000",
    )
    assert wrong_key.returncode == 4 and "Traceback" not in wrong_key.stderr and len(wrong_key.stderr.splitlines()) == 1


def test_report_names_survivors_and_memory_per_gpu() -> None:
    result = ControlResult(
        "terminate", False, "KILL did not end them all", survivors=(41, 42), gpu_held=((3, 42, 20 * GIB),)
    )
    assert report(result, "gpu1 port 30000").splitlines() == [
        "NOT stopped (gpu1 port 30000): KILL did not end them all",
        "still alive: 41 42",
        "GPU 3: pid 42 still holds 20.0 GiB",
        "inspect the pids above on the host, or try again with --force",
    ]
