"""ServerControl.watch_process_state: one long-lived loop on the host, through LocalHost and a real sshd, against
the project's simulator: a killed server is reported dead by the cheap check, an unreachable host is unknown
(never dead), the watch follows the control's own launch, and nothing of the loop is left on the host."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pids import alive
from tests.helpers.processes import Spawner
from tests.helpers.sim import SimServer, group_pids, start_sim
from tests.helpers.sshd import Sshd, ssh_host
from tui.core.events import ServerProcess
from tui.sources.control import ServerControl
from tui.sources.control_cmds import _UP_FUNC
from tui.sources.local import LocalHost

INTERVAL = 0.3
NO_RESCAN = 600.0  # no periodic full scan within a test: a death must be seen by the cheap check
QUIET: dict[str, Any] = {"rescan_s": NO_RESCAN, "first_rescan_s": NO_RESCAN}


@pytest.fixture(params=["local", "ssh"])
async def host(request, spawn):
    h = LocalHost() if request.param == "local" else ssh_host(request.getfixturevalue("sshd"))
    await h.connect()
    yield h
    await h.close()


class Watch:
    """Consumes a watch in a task, keeping every state with the time it arrived."""

    def __init__(self, states: AsyncIterator[ServerProcess]) -> None:
        self.states: list[tuple[float, ServerProcess]] = []
        self._iterator = states
        self._task = asyncio.ensure_future(self._consume())

    async def _consume(self) -> None:
        async for state in self._iterator:
            self.states.append((time.monotonic(), state))

    async def until(self, predicate: Callable[[ServerProcess], object], timeout: float, after: float = 0.0) -> float:
        """When the first state after `after` (monotonic) that satisfies predicate arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert not self._task.done(), self._task
            for at, state in self.states:
                if at >= after and predicate(state):
                    return at
            await asyncio.sleep(0.02)
        raise AssertionError(f"no such state within {timeout} s: {[s for _, s in self.states][-5:]}")

    async def close(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self._iterator.aclose()  # type: ignore[attr-defined]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _parents() -> dict[int, int]:
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                out[int(entry.name)] = int(entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return out


def watch_processes(*needles: str) -> set[int]:
    """Every process of a watch loop whose command names one of needles, with its descendants (sleep, watchdog)."""
    parents = _parents()
    found = {pid for pid in parents if "nap()" in (text := _cmdline(pid)) and any(n in text for n in needles)}
    while True:
        more = {pid for pid, ppid in parents.items() if ppid in found} - found
        if not more:
            return found
        found |= more


def port_of(sim: SimServer) -> str:
    """What names a scan loop of this server: its port-owner check (`printf '%04X' PORT`); the find loop names the log."""
    return f"printf '%04X' {sim.port})"


async def gone(pids: set[int], *needles: str, limit: float = 5.0) -> set[int]:
    """What is still alive of pids (or newly of the watch) after waiting up to limit."""
    deadline = time.monotonic() + limit
    while True:
        left = {p for p in pids if alive(p)} | {p for p in watch_processes(*needles) if alive(p)}
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.05)


async def started(tmp_path: Path) -> SimServer:
    """The simulator with its main, two ranks and detokenizer up (the quiet watch below scans only at its start)."""
    sim = start_sim(tmp_path, speed=200.0, tp=2, shards=8)
    deadline = time.monotonic() + 20
    while len(group_pids(sim.pid)) < 4 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return sim


async def test_a_killed_server_is_reported_dead_and_the_watch_leaves_nothing(host, tmp_path: Path) -> None:
    sim = await started(tmp_path)
    ctl = ServerControl(host, port=sim.port, log_path=str(sim.log))
    watch = Watch(ctl.watch_process_state(INTERVAL, **QUIET))
    needles = (port_of(sim), str(sim.log))
    scanning: set[int] = set()
    searching: set[int] = set()
    try:
        await watch.until(lambda s: s.alive and sim.pid in s.pids and len(s.pids) >= 3, timeout=20)
        scanning = watch_processes(*needles)
        await asyncio.sleep(INTERVAL * 2)  # another nap's sleep
        scanning |= watch_processes(*needles)
        assert len(scanning) >= 3, scanning  # the loop, its watchdog (and cat), its sleep

        killed_at = time.monotonic()
        sim.stop()
        # Within seconds, so by the cheap check of the known pids: the next full scan is NO_RESCAN away.
        dead_at = await watch.until(lambda s: not s.alive, timeout=10, after=killed_at)
        assert [s.detail for _, s in watch.states if not s.alive][0] == "server processes gone"
        # With the server gone the watch looks for a new one (on its own loop; the scanning one has ended).
        await watch.until(lambda s: s.detail.startswith("no server process found"), timeout=10, after=dead_at)
        assert await gone(scanning, port_of(sim)) == set()
        searching = watch_processes(str(sim.log))
        assert searching, "the search loop is not running"
        await watch.until(
            lambda s: s.detail.startswith("no server process found"), timeout=10, after=time.monotonic()
        )  # the search loop just printed: its next print is 5 s away
    finally:
        closing = asyncio.ensure_future(watch.close())
        # Gone before that next print (whose broken pipe would end it too; close() waits for the channel
        # meanwhile): its watchdog ended it when the channel closed.
        left = await gone(scanning | searching, *needles, limit=3.0)
        await closing
        sim.stop()
    assert left == set()


async def test_an_unreachable_host_is_unknown_never_dead(fresh_sshd: Sshd, tmp_path: Path) -> None:
    """sshd and its sessions killed (an outage): no state at all, the host's loop ends with its channel, and
    the watch resumes by itself once sshd is back."""
    sim = await started(tmp_path)
    host = ssh_host(fresh_sshd)
    await host.connect()
    ctl = ServerControl(host, port=sim.port, log_path=str(sim.log))
    watch = Watch(ctl.watch_process_state(INTERVAL, **QUIET))
    try:
        await watch.until(lambda s: s.alive and len(s.pids) >= 3, timeout=20)
        loop = watch_processes(port_of(sim))
        assert loop
        fresh_sshd.kill()
        down_at = time.monotonic()
        assert await gone(loop, port_of(sim)) == set()  # the watchdog saw stdin close
        await asyncio.sleep(2.0)
        # unknown: nothing new, never "dead" (a report already on its way when sshd died may still land: it was
        # read from the host before the kill, and says what was true then)
        assert all(s.alive for at, s in watch.states if at >= down_at), watch.states
        fresh_sshd.start()
        back = await watch.until(lambda s: s.alive and len(s.pids) >= 3, timeout=30, after=time.monotonic())
        assert all(s.alive for at, s in watch.states if at >= down_at), watch.states
        assert back > down_at
    finally:
        await watch.close()
        await host.close()
        sim.stop()
    assert await gone(set(), port_of(sim), str(sim.log)) == set()


async def test_the_watch_follows_the_controls_own_launch(tmp_path: Path, spawn: Spawner) -> None:
    """No server: searching; our launch replaces the target and the watch moves onto it at once; its death
    (SIGKILL of the whole group, left for init to reap) is reported."""
    host = LocalHost()
    await host.connect()
    log = tmp_path / "server.log"
    ctl = ServerControl(host, port=1, log_path=str(log), launch="exec sleep 60", cwd=str(tmp_path))
    watch = Watch(ctl.watch_process_state(INTERVAL, **QUIET))
    pid = 0
    try:
        await watch.until(lambda s: s.detail.startswith("no server process found"), timeout=10)
        launched = await ctl.launch()
        assert launched.ok, launched.detail
        pid = int(launched.detail.split()[2])
        seen = await watch.until(lambda s: s.alive and s.pids == (pid,), timeout=5)
        assert [s.detail for at, s in watch.states if at >= seen][0] == "launched"
        os.killpg(pid, signal.SIGKILL)
        await watch.until(lambda s: not s.alive, timeout=5, after=seen)
    finally:
        await watch.close()
        if pid and alive(pid):
            os.killpg(pid, signal.SIGKILL)
        await host.close()
    assert await gone(set(), str(log)) == set()


async def test_up_says_a_zombie_is_not_alive(tmp_path: Path, spawn: Spawner) -> None:
    host = LocalHost()
    zombie = spawn(["true"])  # never waited for until the end: a zombie meanwhile
    try:
        await asyncio.to_thread(lambda: time.sleep(0.2))
        state = Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state == "Z"
        check = f"for p in $$ {zombie.pid} 999999999; do up $p && echo $p up || echo $p down; done"
        result = await host.run(f"{_UP_FUNC}\n{check}")
        lines = result.stdout.decode().split("\n")
        assert lines[1:3] == [f"{zombie.pid} down", "999999999 down"] and lines[0].endswith(" up"), lines
    finally:
        zombie.wait()
        await host.close()
