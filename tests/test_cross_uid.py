"""A watcher that is not the server's uid (issue 17 case 4): a service account watching a root-owned server.

The fixture creates a real non-root user (CI runs as root) and a real sshd it logs in through, so every
command on the host (the process search, the log tail, the /health forward, the stop) runs as that user,
against the simulator started as root. /proc/PID/fd of root's processes cannot be read by that user: the
server cannot be seen, which must never read as "exited" (or as "nothing to stop")."""

from __future__ import annotations

import subprocess
import time
from datetime import datetime
from pathlib import Path

from tests.helpers.crossuid import CANNOT_SEE, json_lines, tool, tool_args
from tests.helpers.processes import Cli, Sims, Spawner
from tests.helpers.sim import wait_for_log
from tests.helpers.sshd import Sshd
from tests.helpers.verdicts import Followed
from tui.core.readiness import FIND_GRACE_S


def test_the_user_really_cannot_read_roots_fds(shared_dir: Path, other_user: tuple[str, int], sim: Sims) -> None:
    """The premise of the tests below, checked: the user reads /proc/PID/stat but not /proc/PID/fd."""
    server = sim(path=shared_dir / "run", speed=20, tp=2, shards=8)
    try:
        wait_for_log(server, b"server_args")
        run = subprocess.run(
            ["runuser", "-u", other_user[0], "--", "sh", "-c",
             f"cat /proc/{server.pid}/stat >/dev/null && ls /proc/{server.pid}/fd"],
            capture_output=True, text=True,
        )  # fmt: skip
        assert run.returncode != 0 and "Permission denied" in run.stderr
    finally:
        server.stop()


def test_wait_as_another_user_reaches_ready_and_never_says_exited(shared_dir: Path, user_sshd: Sshd, cli: Cli,
                                                                  sim: Sims) -> None:  # fmt: skip
    """Ready comes after the 15 s grace in which a visible watch may not have found a new launch's processes yet:
    past it, what cannot be seen is still unknown, never gone. A fast clock with the weights slowed: ~20 s."""
    server = sim(path=shared_dir / "run", speed=100, tp=2, shards=8, extra=("--slow", "weights=28"))
    try:
        run = tool(cli, "wait", user_sshd, "--log", str(server.log), "--port", str(server.port), "--sim-gpus",
                   str(server.gpu_state), "--timeout", "120", "--json")  # fmt: skip
        states = json_lines(run.stdout)
        assert run.returncode == 0, run.stderr[-3000:]
        assert [s for s in states if s["phase"] == "failed"] == []
        assert "exited" not in run.stderr and "Traceback" not in run.stderr
        last = run.stderr.strip().splitlines()[-1]
        assert states[-1]["phase"] == "ready" and "/health answers 200" in last, last
        assert CANNOT_SEE in last
        assert server.alive()
    finally:
        server.stop()
    # the premise: by the log's own clock, ready came well past the grace after the launch's first line
    logged = [span for span in states[-1]["timeline"] if span["start"]]  # ready itself is /health's, not the log's
    first, last_logged = (datetime.fromisoformat(span["start"]) for span in (logged[0], logged[-1]))
    assert (last_logged - first).total_seconds() >= FIND_GRACE_S + 3, states[-1]["timeline"]


def test_stop_as_another_user_exits_5_and_stops_nothing(shared_dir: Path, user_sshd: Sshd, cli: Cli, sim: Sims) -> None:
    server = sim(path=shared_dir / "run", speed=20, tp=2, shards=8)
    try:
        wait_for_log(server, b"server_args")
        run = tool(cli, "stop", user_sshd, "--port", str(server.port), "--log", str(server.log), "--sim-gpus",
                   str(server.gpu_state), timeout=60)  # fmt: skip
        assert run.returncode == 5, (run.returncode, run.stdout, run.stderr)
        assert CANNOT_SEE in run.stderr and "nothing to stop" not in run.stdout + run.stderr
        assert server.alive()
    finally:
        server.stop()


def test_log_made_unreadable_mid_load_is_named(shared_dir: Path, user_sshd: Sshd, cli: Cli, sim: Sims) -> None:
    """Decided when the tail's next look finds the file unreadable (within a second); the load outlasts the
    wait (a shard per ~20 s), so nothing but the timeout can end it."""
    server = sim(path=shared_dir / "run", speed=20, tp=2, shards=8, extra=("--slow", "weights=50"))
    try:
        wait_for_log(server, b"server_args")
        wait = Followed(cli.popen(*tool_args("wait", user_sshd, "--log", str(server.log), "--port", str(server.port),
                                             "--sim-gpus", str(server.gpu_state), "--timeout", "8", "--json")))  # fmt: skip
        wait.until(lambda state: state["phase"] != "starting")  # the log is read (some phase past starting) …
        server.log.chmod(0o000)  # … then it becomes unreadable
        out = wait.finish(timeout=60)
        last = out.stderr.strip().splitlines()[-1]
        assert out.code == 7 and f"permission denied: {server.log}" in last, out.stderr[-2000:]
        assert "failed" not in last
    finally:
        server.log.chmod(0o644)
        server.stop()


def test_unreadable_log_from_the_start_is_named(shared_dir: Path, user_sshd: Sshd, cli: Cli) -> None:
    log = shared_dir / "private.log"
    log.write_bytes(b"")
    log.chmod(0o600)  # root's, readable by root alone
    started = time.monotonic()
    run = tool(cli, "wait", user_sshd, "--log", str(log), "--port", "1", "--timeout", "15", timeout=60)
    assert run.returncode == 7 and time.monotonic() - started < 60
    assert f"waiting for the first log line: permission denied: {log}" in run.stderr.strip().splitlines()[-1]


async def test_the_watch_and_launch_as_another_user(shared_dir: Path, user_sshd: Sshd, sim: Sims,
                                                    spawn: Spawner) -> None:  # fmt: skip
    """In process: the watch says "cannot see" (uid 0) and a listener it cannot attribute; launch refuses."""
    from tests.helpers.sshd import ssh_host
    from tui.core.events import PortOwner, ServerProcess
    from tui.sources.control import ServerControl

    server = sim(path=shared_dir / "run", speed=400, tp=2, shards=8)
    host = ssh_host(user_sshd)
    try:
        wait_for_log(server, b"fired up", timeout=60)
        await host.connect()
        ctl = ServerControl(host, port=server.port, log_path=str(server.log), launch="sleep 60")
        seen: list[object] = []
        events = ctl.watch_process_events(0.3)
        async for event in events:
            seen.append(event)
            if any(isinstance(e, ServerProcess) for e in seen) and any(isinstance(e, PortOwner) for e in seen):
                break
        await events.aclose()
        state = next(e for e in seen if isinstance(e, ServerProcess))
        assert state == ServerProcess(alive=False, detail=CANNOT_SEE, visible=False, owner_uid=0)
        assert next(e for e in seen if isinstance(e, PortOwner)) == PortOwner(server.port)  # listens; cannot be seen
        launched = await ctl.launch()
        assert not launched.ok and launched.detail.startswith(CANNOT_SEE) and "not launching" in launched.detail
        assert not (server.log.parent / "sim.log.sglang-tui.pid").exists()
    finally:
        await host.close()
        server.stop()
