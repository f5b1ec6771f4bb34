"""A watcher that is not the server's uid (issue 17 case 4): a service account watching a root-owned server.

The fixture creates a real non-root user (CI runs as root) and a real sshd it logs in through, so every
command on the host (the process search, the log tail, the /health forward, the stop) runs as that user,
against the simulator started as root. /proc/PID/fd of root's processes cannot be read by that user: the
server cannot be seen, which must never read as "exited" (or as "nothing to stop")."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.crossuid import CANNOT_SEE, SYSTEM_PYTHON, json_lines, tool
from tests.helpers.sim import ROOT, start_sim, wait_for_log
from tests.helpers.sshd import Sshd


def test_the_user_really_cannot_read_roots_fds(shared_dir: Path, other_user: tuple[str, int]) -> None:
    """The premise of the tests below, checked: the user reads /proc/PID/stat but not /proc/PID/fd."""
    sim = start_sim(shared_dir, speed=20, tp=2, shards=8)
    try:
        wait_for_log(sim, b"server_args")
        run = subprocess.run(
            [
                "runuser",
                "-u",
                other_user[0],
                "--",
                "sh",
                "-c",
                f"cat /proc/{sim.pid}/stat >/dev/null && ls /proc/{sim.pid}/fd",
            ],
            capture_output=True,
            text=True,
        )
        assert run.returncode != 0 and "Permission denied" in run.stderr
    finally:
        sim.stop()


def test_wait_as_another_user_reaches_ready_and_never_says_exited(shared_dir: Path, user_sshd: Sshd) -> None:
    sim = start_sim(shared_dir, speed=5, tp=2, shards=8)  # ~30 s to ready: past the 15 s "not found" grace
    try:
        run = tool(
            "wait",
            user_sshd,
            "--log",
            str(sim.log),
            "--port",
            str(sim.port),
            "--sim-gpus",
            str(sim.gpu_state),
            "--timeout",
            "120",
            "--json",
        )
        states = json_lines(run.stdout)
        assert run.returncode == 0, run.stderr[-3000:]
        assert [s for s in states if s["phase"] == "failed"] == []
        assert "exited" not in run.stderr and "Traceback" not in run.stderr
        last = run.stderr.strip().splitlines()[-1]
        assert states[-1]["phase"] == "ready" and "/health answers 200" in last, last
        assert CANNOT_SEE in last
        assert sim.alive()
    finally:
        sim.stop()


def test_stop_as_another_user_exits_5_and_stops_nothing(shared_dir: Path, user_sshd: Sshd) -> None:
    sim = start_sim(shared_dir, speed=20, tp=2, shards=8)
    try:
        wait_for_log(sim, b"server_args")
        run = tool(
            "stop",
            user_sshd,
            "--port",
            str(sim.port),
            "--log",
            str(sim.log),
            "--sim-gpus",
            str(sim.gpu_state),
            timeout=60,
        )
        assert run.returncode == 5, (run.returncode, run.stdout, run.stderr)
        assert CANNOT_SEE in run.stderr and "nothing to stop" not in run.stdout + run.stderr
        assert sim.alive()
    finally:
        sim.stop()


def test_log_made_unreadable_mid_load_is_named(shared_dir: Path, user_sshd: Sshd) -> None:
    sim = start_sim(shared_dir, speed=1, tp=2, shards=8)  # slow: the load outlasts the wait
    try:
        wait_for_log(sim, b"server_args")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tui",
                "wait",
                "127.0.0.1",
                *user_sshd.ssh_args(),
                "--remote-python",
                SYSTEM_PYTHON,
                "--log",
                str(sim.log),
                "--port",
                str(sim.port),
                "--sim-gpus",
                str(sim.gpu_state),
                "--timeout",
                "15",
                "--json",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert proc.stdout is not None
        for line in proc.stdout:  # the log is read (some phase past starting), then it becomes unreadable
            if line.startswith("{") and json.loads(line)["phase"] != "starting":
                break
        sim.log.chmod(0o000)
        out, err = proc.communicate(timeout=60)
        last = err.strip().splitlines()[-1]
        assert proc.returncode == 2 and f"permission denied: {sim.log}" in last, err[-2000:]
        assert "failed" not in last
    finally:
        sim.log.chmod(0o644)
        sim.stop()


def test_unreadable_log_from_the_start_is_named(shared_dir: Path, user_sshd: Sshd) -> None:
    log = shared_dir / "private.log"
    log.write_bytes(b"")
    log.chmod(0o600)  # root's, readable by root alone
    started = time.monotonic()
    run = tool("wait", user_sshd, "--log", str(log), "--port", "1", "--timeout", "6", timeout=60)
    assert run.returncode == 2 and time.monotonic() - started < 60
    assert f"waiting for the first log line: permission denied: {log}" in run.stderr.strip().splitlines()[-1]


async def test_the_watch_and_launch_as_another_user(shared_dir: Path, user_sshd: Sshd) -> None:
    """In process: the watch says "cannot see" (uid 0) and a listener it cannot attribute; launch refuses."""
    from tests.helpers.sshd import ssh_host
    from tui.core.events import PortOwner, ServerProcess
    from tui.sources.control import ServerControl

    sim = start_sim(shared_dir, speed=50, tp=2, shards=8)
    host = ssh_host(user_sshd)
    try:
        wait_for_log(sim, b"fired up", timeout=60)
        await host.connect()
        ctl = ServerControl(host, port=sim.port, log_path=str(sim.log), launch="sleep 60")
        seen: list[object] = []
        events = ctl.watch_process_events(0.3)
        async for event in events:
            seen.append(event)
            if any(isinstance(e, ServerProcess) for e in seen) and any(isinstance(e, PortOwner) for e in seen):
                break
        await events.aclose()
        state = next(e for e in seen if isinstance(e, ServerProcess))
        assert state == ServerProcess(alive=False, detail=CANNOT_SEE, visible=False, owner_uid=0)
        assert next(e for e in seen if isinstance(e, PortOwner)) == PortOwner(sim.port)  # listens; cannot be seen
        launched = await ctl.launch()
        assert not launched.ok and launched.detail.startswith(CANNOT_SEE) and "not launching" in launched.detail
        assert not (shared_dir / "sim.log.sglang-tui.pid").exists()
    finally:
        await host.close()
        sim.stop()
