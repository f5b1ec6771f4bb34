"""PortOwner from the process watch (issue 17): who listens on --port, and whether it is the server's.

Real processes: the simulator (which binds its port after the model loads, as SGLang does) and a foreign
`python -m http.server` holding the port while the simulator loads. Through LocalHost and a real sshd."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.deadline import deadline
from tests.helpers.processes import Sims
from tests.helpers.sim import group_pids, http_get, wait_for_log
from tests.helpers.sshd import free_port, ssh_host
from tui.core.events import PortOwner, ServerProcess
from tui.sources.control import ServerControl
from tui.sources.local import LocalHost


@pytest.fixture(params=["local", "ssh"])
async def host(request, spawn):
    h = LocalHost() if request.param == "local" else ssh_host(request.getfixturevalue("sshd"))
    await h.connect()
    yield h
    await h.close()


async def owners_until(ctl: ServerControl, predicate, timeout: float = 30.0) -> list[PortOwner]:
    """The PortOwner events of a watch until one satisfies predicate (fails with what came on timeout)."""
    seen: list[PortOwner] = []
    events = ctl.watch_process_events(0.3)
    try:
        async with deadline(timeout):
            async for event in events:
                if isinstance(event, PortOwner):
                    seen.append(event)
                    if predicate(event):
                        return seen
                else:
                    assert isinstance(event, ServerProcess)
    except TimeoutError:
        raise AssertionError(f"no such PortOwner within {timeout} s: {seen}") from None
    finally:
        await events.aclose()
    raise AssertionError(f"the watch ended: {seen}")


def listening(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            http_get(port, "/", timeout=2)
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing answers on {port}"
            time.sleep(0.05)


async def test_the_simulators_own_listener_is_ours(host, tmp_path: Path, sim: Sims) -> None:
    server = sim(tmp_path, speed=200.0, tp=2, shards=8)
    wait_for_log(server, b"fired up", timeout=60)
    ctl = ServerControl(host, port=server.port, log_path=str(server.log))
    seen = await owners_until(ctl, lambda o: o.pid is not None)
    owner = seen[-1]
    assert owner.port == server.port and owner.ours is True, seen
    assert owner.pid in group_pids(server.pid) and "simulate" in owner.command
    assert len(seen) == 1, seen  # said once, not per tick


async def test_a_foreign_server_on_the_port_is_not_ours(host, tmp_path: Path, sim: Sims) -> None:
    port = free_port()
    foreign = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
        start_new_session=True,
    )
    server = sim(tmp_path, speed=2.0, tp=2, shards=8, port=port)  # loads for a minute before it binds
    try:
        listening(port)
        wait_for_log(server, b"server_args")
        ctl = ServerControl(host, port=port, log_path=str(server.log))
        seen = await owners_until(ctl, lambda o: o.pid is not None)
        owner = seen[-1]
        assert owner == PortOwner(port, foreign.pid, owner.command, False), seen
        assert "http.server" in owner.command
        # the watch adopted the simulator (the log's writer), not the foreign listener
        state = await ctl.process_state_now()
        assert state.alive and foreign.pid not in state.pids and server.pid in state.pids
    finally:
        foreign.kill()
        foreign.wait()
