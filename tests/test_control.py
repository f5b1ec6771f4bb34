"""ServerControl against small real process trees (tests/helpers/proctree.py: titled ranks, an orphan that
double-forked into a group of its own, a daemon that left the session, a same-titled bystander): finding,
adopting, sweeping and reporting."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.pids import alive
from tests.helpers.processes import Spawner
from tests.helpers.sim import gpu_holders
from tests.helpers.sshd import free_port
from tui.sources.control import ServerControl, _Target
from tui.sources.control_cmds import MARKER_VAR
from tui.sources.local import LocalHost

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "tests" / "helpers" / "proctree.py"
GIB = 2**30


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Cleanup whatever the test left of a hand-started tree (its own session; the orphan is swept by the test)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def stat_fields(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def group_of(pid: int) -> int:
    return int(stat_fields(pid)[2])


def session_of(pid: int) -> int:
    return int(stat_fields(pid)[3])


def wait_for(predicate, limit: float = 15.0) -> bool:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class Scene:
    """A tmp dir with a space in its name (quoting end to end), a sim GPU state, a port and a bystander."""

    def __init__(self, tmp_path: Path, spawn: Spawner) -> None:
        self.dir = tmp_path / "run dir 'q'"
        self.dir.mkdir()
        self.state = self.dir / "gpus"
        self.log = self.dir / "server.log"
        self.port = free_port()
        self.bystander = spawn(
            [sys.executable, TREE, "bystander", "--gpu-state", self.state], stdout=subprocess.DEVNULL
        )
        assert wait_for(lambda: self.bystander.pid in gpu_holders(self.state))

    def command(self, *extra: str) -> str:
        words = [
            sys.executable,
            str(TREE),
            "--port",
            str(self.port),
            "--gpu-state",
            str(self.state),
            "--tp",
            "2",
            *extra,
        ]
        return shlex.join(words)

    def server_up(self, ranks: int) -> bool:
        return len([p for p in gpu_holders(self.state) if p != self.bystander.pid]) == ranks

    def close(self) -> None:
        for pid in gpu_holders(self.state):  # leftovers only when a test failed midway (this test's own state dir)
            if pid != self.bystander.pid:
                os.kill(pid, signal.SIGKILL)
        self.bystander.kill()
        self.bystander.wait()


@pytest.fixture
def scene(tmp_path: Path, spawn: Spawner):
    s = Scene(tmp_path, spawn)
    yield s
    s.close()


@pytest.fixture
async def host(spawn: Spawner):
    """LocalHost: these trees test the finding and sweeping rules; the sshd path runs in test_control_sim.py."""
    h = LocalHost()
    await h.connect()
    yield h
    await h.close()


def control(host, scene: Scene, launch: str | None = None, **kw) -> ServerControl:
    return ServerControl(
        host,
        port=scene.port,
        log_path=str(scene.log),
        launch=launch,
        cwd=str(scene.dir),
        remote_python=sys.executable,
        sim_gpus=str(scene.state),
        **kw,
    )


async def test_terminate_sweeps_the_orphan_and_spares_the_bystander(host, scene: Scene) -> None:
    ctl = control(host, scene, scene.command("--orphan"), grace_s=5)
    launched = await ctl.launch()
    assert launched.ok, launched.detail
    assert await asyncio.to_thread(wait_for, lambda: scene.server_up(3))
    state = await ctl.process_state()
    pids = set(state.pids)
    leader = min(pids)
    orphan = [p for p in gpu_holders(scene.state) if p != scene.bystander.pid and group_of(p) != leader]
    assert len(orphan) == 1 and session_of(orphan[0]) == leader and stat_fields(orphan[0])[1] != str(leader)
    assert state.alive and orphan[0] in pids  # another group, not a descendant: found by the session alone
    assert scene.bystander.pid not in pids

    result = await ctl.terminate()

    assert result.ok and result.survivors == () and result.gpu_held == (), result.detail
    assert "GPU memory released" in result.detail and "per sim" in result.detail
    assert [p for p in pids if alive(p)] == []
    assert alive(scene.bystander.pid)  # same title, another session: never touched
    snap = await ctl.gpu_snapshot()
    assert [(g.index, g.used_bytes) for g in snap.gpus if g.used_bytes] == [(0, 10 * GIB)]  # only the bystander
    assert (await ctl.process_state()).alive is False


async def test_term_ignored_then_killed_after_grace(scene: Scene) -> None:
    host = LocalHost()
    ctl = control(host, scene, scene.command("--orphan", "--ignore-term"), grace_s=1)
    assert (await ctl.launch()).ok
    assert await asyncio.to_thread(wait_for, lambda: scene.server_up(3))
    pids = (await ctl.process_state()).pids
    result = await ctl.terminate()
    assert result.ok, result.detail
    assert "still alive after 1 s of TERM; killed" in result.detail
    assert "kill -s TERM" in result.command and "kill -s KILL" in result.command
    assert [p for p in pids if alive(p)] == [] and alive(scene.bystander.pid)


async def test_kill_sends_no_term(host, scene: Scene) -> None:
    ctl = control(host, scene, scene.command("--orphan", "--ignore-term"))
    assert (await ctl.launch()).ok
    assert await asyncio.to_thread(wait_for, lambda: scene.server_up(3))
    pids = (await ctl.process_state()).pids
    result = await ctl.kill()
    assert result.ok and "TERM" not in result.command and result.detail.startswith("killed"), result
    assert [p for p in pids if alive(p)] == [] and alive(scene.bystander.pid)


async def test_adopts_a_hand_started_server_by_its_log(scene: Scene) -> None:
    """Started by a person (`setsid nohup … > log &`): no run marker, no pidfile; its orphan still writes the log."""
    with open(scene.log, "wb") as log:
        main = subprocess.Popen(
            scene.command("--orphan"),
            shell=True,
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        assert await asyncio.to_thread(wait_for, lambda: scene.server_up(3))
        ctl = control(LocalHost(), scene)  # no --launch
        state = await ctl.process_state_now()
        assert state.alive and main.pid in state.pids
        members = [p for p in gpu_holders(scene.state) if p != scene.bystander.pid]
        result = await ctl.terminate()
        assert result.ok, result.detail
        assert [p for p in [main.pid, *members] if alive(p)] == [] and alive(scene.bystander.pid)
    finally:
        kill_group(main)


async def test_adopts_by_port_without_a_log(scene: Scene) -> None:
    main = subprocess.Popen("exec " + scene.command(), shell=True, stdout=subprocess.DEVNULL, start_new_session=True)
    host = LocalHost()
    await host.connect()
    try:
        assert await asyncio.to_thread(wait_for, lambda: scene.server_up(2))
        ctl = ServerControl(host, port=scene.port, remote_python=sys.executable, sim_gpus=str(scene.state))
        state = await ctl.process_state_now()
        assert state.alive and main.pid in state.pids and len(state.pids) >= 3
        assert (await ctl.kill()).ok
        assert not alive(main.pid) and alive(scene.bystander.pid)
    finally:
        kill_group(main)
        await host.close()


async def test_a_new_session_adopts_our_launch_from_the_pidfile(scene: Scene) -> None:
    """The TUI restarted: the pidfile and the marker in the leader's environment find the orphan too."""
    host = LocalHost()
    await host.connect()
    first = control(host, scene, scene.command("--orphan"))
    try:
        assert (await first.launch()).ok
        assert await asyncio.to_thread(wait_for, lambda: scene.server_up(3))
        second = control(host, scene)
        state = await second.process_state_now()
        assert state.detail == "pidfile" and set(state.pids) == set((await first.process_state()).pids)
        assert MARKER_VAR in second.describe("kill")
        result = await second.kill()
        assert result.ok and not any(alive(p) for p in state.pids), result.detail
    finally:
        await first.kill()
        await host.close()


async def test_launch_refuses_when_already_running_and_describe_shows_the_commands(scene: Scene) -> None:
    host = LocalHost()
    await host.connect()
    ctl = control(host, scene, scene.command())
    try:
        assert "setsid sh -c" in ctl.describe("launch") and "'\"'\"'q'\"'\"'" in ctl.describe("launch")
        launched = await ctl.launch()
        assert launched.ok and launched.command.startswith("rm -f -- ")
        assert await asyncio.to_thread(wait_for, lambda: scene.server_up(2))
        again = await ctl.launch()
        assert not again.ok and "already running" in again.detail and again.survivors
        leader = min((await ctl.process_state()).pids)
        text = ctl.describe("terminate")
        assert f"kill -s TERM -- -{leader}" in text and f"kill -s KILL -- -{leader}" in text
        assert "--count 1" in text  # the GPU confirmation is shown too
    finally:
        await ctl.kill()
        await host.close()


async def test_nothing_to_stop_and_launch_needs_a_command(scene: Scene) -> None:
    host = LocalHost()
    await host.connect()
    try:
        ctl = control(host, scene)
        result = await ctl.terminate()
        assert result.ok and result.detail.startswith("nothing to stop") and result.survivors == ()
        assert not (await ctl.launch()).ok and not (await ctl.restart()).ok
        assert "no --launch" in (await ctl.restart()).detail
    finally:
        await host.close()


async def test_memory_still_held_is_reported_with_gpu_pid_and_size(scene: Scene) -> None:
    """What the report says when a pid of the server still holds memory (the bystander's pid stands in)."""
    host = LocalHost()
    await host.connect()
    try:
        ctl = control(host, scene, gpu_release_s=0.3)
        pid = scene.bystander.pid
        ok, still, note = await ctl._confirm_gpu(_Target(seen={pid}, names={pid: "sglang::scheduler_TP0"}))
        assert not ok and still == ((0, pid, 10 * GIB),)
        assert note == f"GPU memory still held: GPU 0 10.0 GiB by pid {pid} sglang::scheduler_TP0"
        broken = ServerControl(
            host, port=scene.port, remote_python=sys.executable, sim_gpus=str(scene.dir / "none"), gpu_release_s=0.1
        )
        ok, still, note = await broken._confirm_gpu(_Target(seen={pid}))
        assert not ok and note.startswith("GPU memory not confirmed: simulated GPU state unreadable")
    finally:
        await host.close()


async def test_a_daemon_that_left_the_session_is_spared_though_it_carries_the_marker(host, scene: Scene) -> None:
    """Issue 26: the launch started a daemon that left its session (tmux's server does): it inherited the run
    marker, and it is not the server's. The sweep takes the server's tree and leaves it running."""
    ctl = control(host, scene, scene.command("--orphan", "--daemon"), grace_s=5)
    assert (await ctl.launch()).ok
    assert await asyncio.to_thread(wait_for, lambda: scene.server_up(3) and (scene.state / "daemon.pid").exists())
    daemon = int((scene.state / "daemon.pid").read_text())
    try:
        run_id = ctl._target.run_id if ctl._target else None
        environ = Path(f"/proc/{daemon}/environ").read_bytes().split(b"\0")
        assert run_id and f"{MARKER_VAR}={run_id}".encode() in environ and session_of(daemon) == daemon
        pids = (await ctl.process_state()).pids
        assert daemon not in pids
        result = await ctl.terminate()
        assert result.ok and result.survivors == (), result.detail
        assert [p for p in pids if alive(p)] == [] and alive(daemon) and alive(scene.bystander.pid)
    finally:
        await ctl.kill()  # what a failed assertion left of the server (nothing, when it passed)
        if alive(daemon):
            os.kill(daemon, signal.SIGKILL)


SELF_STOP = """
import asyncio, os, sys
from tui.sources import control_cmds as cmds
from tui.sources.local import LocalHost

async def main():
    me, group = os.getpid(), os.getpgid(0)
    host = LocalHost()
    scan = cmds.scan_command(group=group, session=os.getsid(0), known={me: 0})
    result = await host.run(cmds.stop_command("TERM", group=group, procs={}, wait_s=0.1, scan=scan))
    found = cmds.parse_scan(result.stdout.decode())
    print("members", sorted(found), "me", me, flush=True)

asyncio.run(main())
print("survived", flush=True)
"""


def test_the_tool_is_never_its_own_target(spawn) -> None:
    """Issue 26: a `stop` run inside the server's own group and session (a hook, a shell of the launch) must
    neither TERM its group nor find itself among the server's processes. A child in a group of its own runs the
    stop command against its own group and session: it lives, and is not a member."""
    proc = spawn([sys.executable, "-c", SELF_STOP], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                 cwd=ROOT)  # fmt: skip
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out.splitlines()[-1] == "survived", (proc.returncode, out, err)
    members, me = out.splitlines()[0].split(" me ")
    assert me.strip() not in members.replace("[", " ").replace("]", " ").replace(",", " ").split()
