"""ServerControl against the project's simulator (real process tree, real log, real HTTP, simulated GPU
memory), through LocalHost and through a real sshd: stop, kill, restart, and the `orphans` fault."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.pids import alive
from tests.helpers.processes import Sims, Spawner
from tests.helpers.sim import SimServer, gpu_holders
from tests.helpers.sshd import ssh_host
from tui.sim.rank import ESCAPE_ENV
from tui.sources.control import ServerControl
from tui.sources.local import LocalHost

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "tests" / "helpers" / "proctree.py"
GIB = 2**30
TP = 2


async def ranks_hold_memory(state: Path, skip: int, count: int = TP, limit: float = 20.0) -> list[int]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        pids = [p for p in gpu_holders(state) if p != skip]
        if len(pids) >= count:
            return pids
        await asyncio.sleep(0.05)
    raise AssertionError(f"the simulated ranks never held GPU memory: {gpu_holders(state)}")


@pytest.fixture(params=["local", "ssh"])
async def host(request, spawn):
    if request.param == "local":
        h = LocalHost()
    else:
        sshd = request.getfixturevalue("sshd")
        h = ssh_host(sshd)
    await h.connect()
    yield h
    await h.close()


@pytest.fixture
def bystander(tmp_path: Path, spawn: Spawner):
    """Somebody else's `sglang::scheduler_TP0` on GPU 0 of the same host (another session, no marker)."""
    return spawn([sys.executable, TREE, "bystander", "--gpu-state", tmp_path / "gpus"], stdout=subprocess.DEVNULL)


def sim_tree(sim: SimServer) -> set[int]:
    """Every live process of the simulator: its group plus whatever carries its run marker."""
    from tests.helpers.sim import _pids_with_marker, group_pids

    return set(group_pids(sim.pid)) | {p for p in _pids_with_marker(sim.run_id) if alive(p)}


def controller(host, sim: SimServer, **kw) -> ServerControl:
    return ServerControl(
        host, port=sim.port, log_path=str(sim.log), remote_python=sys.executable, sim_gpus=str(sim.gpu_state), **kw
    )


async def check_clean(ctl: ServerControl, result, before: set[int], bystander: subprocess.Popen[bytes]) -> None:
    assert result.ok and result.survivors == () and result.gpu_held == (), result.detail
    assert "GPU memory released" in result.detail
    assert [p for p in before if alive(p)] == []
    assert bystander.poll() is None and alive(bystander.pid)
    snap = await ctl.gpu_snapshot()
    assert {p.pid for g in snap.gpus for p in g.procs} == {bystander.pid}  # only the bystander holds memory


@pytest.mark.parametrize(
    ("host", "escape"),
    [("local", False), ("ssh", False), ("local", True)],
    ids=["local-orphans", "ssh-orphans", "local-orphans-setsid"],
    indirect=["host"],
)
async def test_terminate_orphans_fault(host, tmp_path: Path, bystander, escape: bool, sim: Sims) -> None:
    """Orphans ignore TERM and outlive their parent, re-parented but still in the launch's session: swept by it.
    With setsid they leave the session, as SGLang's never do: outside it the run marker is no evidence (a tmux
    server carries it too), but they still hold the server's log open for writing, carry an SGLang title and
    started after its main process: the evidence a forkserver's ranks are found by (SGLANG_EARLY_FORKSERVER,
    tests/test_forkserver_sim.py), so they are swept too."""
    server = sim(tmp_path, fault="orphans", tp=TP, speed=100.0, env={ESCAPE_ENV: "1"} if escape else None)
    ranks = await ranks_hold_memory(server.gpu_state, bystander.pid)
    before = sim_tree(server)
    ctl = controller(host, server, grace_s=1.0, gpu_release_s=30.0)
    assert (await ctl.process_state_now()).alive
    if escape:
        assert all(os.getsid(p) == p for p in ranks)  # they left the session
    result = await ctl.terminate()
    await check_clean(ctl, result, before, bystander)
    assert "still alive after 1 s of TERM" in result.detail


async def test_kill(host, tmp_path: Path, bystander, sim: Sims) -> None:
    server = sim(tmp_path, tp=TP, speed=100.0)
    await ranks_hold_memory(server.gpu_state, bystander.pid)
    before = sim_tree(server)
    ctl = controller(host, server)
    result = await ctl.kill()
    await check_clean(ctl, result, before, bystander)
    assert server.wait(5) == -9


async def test_terminate_a_server_that_drains(tmp_path: Path, bystander, sim: Sims) -> None:
    """No fault: SIGTERM is handled (drain, ShutdownReq), everything exits within the grace period."""
    server = sim(tmp_path, tp=TP, speed=100.0)
    host = LocalHost()
    try:
        await ranks_hold_memory(server.gpu_state, bystander.pid)
        before = sim_tree(server)
        ctl = controller(host, server, grace_s=20.0)
        result = await ctl.terminate()
        await check_clean(ctl, result, before, bystander)
        assert result.detail.startswith("exited on TERM")
    finally:
        await host.close()


async def test_restart_stops_the_adopted_sim_and_launches_it_again(host, tmp_path: Path, bystander, sim: Sims) -> None:
    server = sim(tmp_path, tp=TP, speed=100.0)
    relaunched: set[int] = set()
    ctl = controller(host, server, launch=server.launch_command(), cwd=str(ROOT), grace_s=1.0)
    try:
        await ranks_hold_memory(server.gpu_state, bystander.pid)
        before = sim_tree(server)
        result = await ctl.restart()
        assert result.ok, result.detail
        assert "GPU memory released" in result.detail and "started pid" in result.detail
        assert [p for p in before if alive(p)] == []
        new = await ranks_hold_memory(server.gpu_state, bystander.pid)
        relaunched = set((await ctl.process_state()).pids)
        assert set(new) <= relaunched and not relaunched & before
    finally:
        final = await ctl.kill()
        server.stop()
    assert final.ok and not any(alive(p) for p in relaunched) and alive(bystander.pid)
