"""`sglang-tui wait --launch CMD` launches the simulator (own session, PID file, run marker) and waits for it;
`--stop-on-fail` stops what it launched; `--on-ready` / `--on-fail` run with the verdict in the environment."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from tests.helpers.processes import Cli
from tests.helpers.sim import ROOT
from tests.helpers.sshd import free_port
from tui.commands.simulate import command_line


def _launch_cmd(tmp_path: Path, port: int, *extra: str) -> tuple[str, Path, Path]:
    log, gpus = tmp_path / "server.log", tmp_path / "gpus"
    return command_line(log, port, gpus, "--speed", "500", "--tp", "2", "--shards", "8", *extra), log, gpus


def _wait(
    cli: Cli, tmp_path: Path, port: int, launch: str, log: Path, gpus: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    return cli(
        "wait", "local", "--log", log, "--port", str(port), "--sim-gpus", gpus, "--launch", launch, "--cwd", ROOT,
        "--remote-python", sys.executable, "--timeout", "90", *extra, timeout=150,
    )  # fmt: skip


def _left(tmp_path: Path) -> list[int]:
    """Processes of this test's simulator still alive (its temp dir is on their command lines)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(tmp_path) in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def _cleanup(tmp_path: Path) -> None:
    for pid in _left(tmp_path):  # only the simulator this test launched
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def test_wait_launch_reaches_ready_exits_0_and_runs_on_ready(tmp_path: Path, cli: Cli) -> None:
    port = free_port()
    launch, log, gpus = _launch_cmd(tmp_path, port)
    env_file = tmp_path / "hook.env"
    try:
        done = _wait(
            cli,
            tmp_path,
            port,
            launch,
            log,
            gpus,
            "--on-ready",
            f"env | grep ^SGLANG_TUI_ > {shlex.quote(str(env_file))}",
        )
        assert done.returncode == 0, done.stderr
        assert "sglang-tui wait: launched: started pid" in done.stderr
        assert "sglang-tui wait: ready" in done.stderr
        assert log.exists() and b"The server is fired up" in log.read_bytes()
        hook = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
        assert (
            hook["SGLANG_TUI_VERDICT"] == "ready"
            and hook["SGLANG_TUI_EXIT"] == "0"
            and hook["SGLANG_TUI_PORT"] == str(port)
        )
        assert _left(tmp_path)  # ready: what it launched keeps running (a script wanted a server)
    finally:
        _cleanup(tmp_path)


def test_wait_launch_stop_on_fail_stops_it_and_says_gpu_memory_came_back(tmp_path: Path, cli: Cli) -> None:
    port = free_port()
    launch, log, gpus = _launch_cmd(tmp_path, port, "--fault", "oom-capture")
    env_file = tmp_path / "fail.env"
    try:
        done = _wait(
            cli,
            tmp_path,
            port,
            launch,
            log,
            gpus,
            "--stop-on-fail",
            "--on-fail",
            f"env | grep ^SGLANG_TUI_ > {shlex.quote(str(env_file))}",
        )
        assert done.returncode == 1, done.stderr
        assert "sglang-tui wait: failed in CUDA graph capture (out of memory): " in done.stderr
        stop_line = next(line for line in done.stderr.splitlines() if "--stop-on-fail:" in line)
        if "nothing to stop" in stop_line:  # the crashed server's processes had all exited before the stop began
            assert "no server process found" in stop_line, stop_line
        else:  # the stop took what was left of it, then saw its GPU memory come back
            assert "terminate done: no server process left" in stop_line and "GPU memory released" in stop_line
        assert not _left(tmp_path)
        hook = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
        assert hook["SGLANG_TUI_VERDICT"] == "failed" and "(out of memory)" in hook["SGLANG_TUI_REASON"]
    finally:
        _cleanup(tmp_path)


def test_stop_help_shows_only_stops_options(cli: Cli) -> None:
    done = cli("stop", "--help", timeout=60)
    assert done.returncode == 0 and "--force" in done.stdout
    for watch_only in ("--launch", "--read-only", "--stall-after", "--cwd"):
        assert watch_only not in done.stdout


def test_an_unknown_first_word_is_named_not_taken_for_a_host(tmp_path: Path, cli: Cli) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host gpubox\n  HostName 10.0.0.7\nHost *\n  ServerAliveInterval 5\n")
    done = cli("frobnicate", "--ssh-config", str(config), timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("sglang-tui: unknown command or host: frobnicate")
    assert len(done.stderr.strip().splitlines()) == 1
    from tui.cli import looks_like_a_mistyped_command

    argv = ["gpubox", "--ssh-config", str(config)]
    assert not looks_like_a_mistyped_command("gpubox", argv)  # an alias of the ssh config is a host
    for host in ("user@gpu7", "gpu-7.example.com", "10.0.0.7", "local"):
        assert not looks_like_a_mistyped_command(host, argv)
