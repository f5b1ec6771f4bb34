"""A local probe's look without an event loop (tui.sources.now.NowHost, issue 32) sees what the same look sees
through LocalHost on a loop: the same FileLook of the log, the same bytes, the same /health answers and the same
processes, so the fold gets the same batch of events either way. Real files, a real simulator, real sockets."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from types import coroutine

import pytest

from tests.helpers.processes import Sims, Spawner
from tests.helpers.sim import wait_ready
from tui.core.events import HealthResult
from tui.core.probe_fold import FileLook
from tui.sources import control_cmds as cmds
from tui.sources import now, probe_look
from tui.sources.host import CommandResult
from tui.sources.local import LocalHost
from tui.sources.now import NowHost, run_now


def _same_look(here: FileLook, there: FileLook) -> None:
    """Every field alike; the clocks (mtime, the host's skew) to within what float rounding and a look's own
    time leave."""
    assert (here.kind, here.dev, here.inode, here.size, here.symlink, here.readable, here.tail, here.last_t) == (
        there.kind, there.dev, there.inode, there.size, there.symlink, there.readable, there.tail, there.last_t,
    )  # fmt: skip
    assert (here.mtime is None) == (there.mtime is None)
    if here.mtime is not None and there.mtime is not None:
        assert abs(here.mtime - there.mtime) < 1e-5
    assert abs(here.skew) < 5 and abs(there.skew) < 5


async def test_the_log_look_and_its_bytes_are_the_shells(tmp_path: Path, spawn: Spawner) -> None:
    """(spawn: LocalHost's look runs sh commands, an e2e test's.)"""
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(b"[2026-12-06 10:00:%02d] line %d\n" % (i % 60, i) for i in range(4000)))
    (tmp_path / "link.log").symlink_to(log)
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "dir.log").mkdir()
    (tmp_path / "dangling.log").symlink_to(tmp_path / "gone.log")
    local = LocalHost()
    names = ("server.log", "link.log", "empty.log", "dir.log", "dangling.log", "missing.log")
    for name in names:
        path = str(tmp_path / name)
        for at, tail_bytes in ((0, 0), (1000, 64), (10, 64)):  # no tail; the bytes before an offset; too few
            here = run_now(probe_look.look_at_log(NowHost(), path, at=at, tail_bytes=tail_bytes))
            there = await probe_look.look_at_log(local, path, at=at, tail_bytes=tail_bytes)
            _same_look(here, there)
        assert run_now(probe_look.read_log(NowHost(), path, 1234, 5000)) == await probe_look.read_log(
            local, path, 1234, 5000
        )
    kinds = [run_now(probe_look.look_at_log(NowHost(), str(tmp_path / n))).kind for n in names]
    assert kinds == ["file", "file", "file", "directory", "missing", "missing"]
    assert run_now(probe_look.read_log(NowHost(), str(log), 10, 20)) == log.read_bytes()[10:30]


@pytest.fixture
def odd_server() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback listener that answers each connection with the next reply of the list (None: says nothing
    and holds the connection until the test ends)."""
    listener = socket.create_server(("127.0.0.1", 0))
    replies: list[bytes] = []
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(4096)
            reply = replies.pop(0) if replies else b""
            if reply == b"SILENT":
                held.append(conn)
                continue
            conn.sendall(reply)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], replies
    stop.set()
    listener.close()
    for conn in held:
        conn.close()
    thread.join(5)


async def test_health_answers_are_the_event_loops(sim: Sims, odd_server: tuple[int, list[bytes]]) -> None:
    server = wait_ready(sim(speed=200.0, shards=4))
    local = LocalHost()

    def outcome(results: list[HealthResult]) -> list[tuple[str, str, int | None, str | None]]:
        return [(r.endpoint, r.outcome, r.status, r.model_path) for r in results]

    for identify in (False, True):  # /health alone; the identity probe with it (its model path from the body)
        here = run_now(probe_look.health(NowHost(), server.port, timeout=10, identify=identify))
        there = await probe_look.health(local, server.port, timeout=10, identify=identify)
        assert outcome(here) == outcome(there)
        assert here[-1].outcome == "ok" and here[-1].status == 200
    assert identify and here[0].model_path

    port, replies = odd_server
    cases = {
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n": "starting",
        b"SSH-2.0-OpenSSH_9.6\r\n": "garbage",
        b"": "refused",  # closed without a word
        b"SILENT": "timeout",
    }
    for reply, expected in cases.items():
        replies[:] = [reply, reply]
        here = run_now(probe_look.health(NowHost(), port, timeout=1.0, identify=False))
        there = await probe_look.health(local, port, timeout=1.0, identify=False)
        assert outcome(here) == outcome(there), reply
        assert here[0].outcome == expected or (expected == "starting" and here[0].status == 503), (reply, here)
    closed = socket.create_server(("127.0.0.1", 0))
    nobody = closed.getsockname()[1]
    closed.close()
    here = run_now(probe_look.health(NowHost(), nobody, timeout=1.0, identify=False))
    assert outcome(here) == outcome(await probe_look.health(local, nobody, timeout=1.0, identify=False))
    assert here[0].outcome == "refused"


async def test_the_process_look_is_the_event_loops(sim: Sims) -> None:
    server = wait_ready(sim(speed=200.0, shards=4))
    log = str(server.log)
    process, owner, found = run_now(probe_look.processes(NowHost(), server.port, log, None))
    there, there_owner, there_found = await probe_look.processes(LocalHost(), server.port, log, None)
    assert process.alive and process.pids == there.pids and server.pid in process.pids
    assert owner == there_owner and found is not None and there_found is not None
    assert (found.main, found.known, found.listeners) == (there_found.main, there_found.known, there_found.listeners)
    again, _, _ = run_now(probe_look.processes(NowHost(), server.port, log, found))  # the next call resumes
    assert again.alive and again.pids == process.pids


class CountingNowHost(NowHost):
    """NowHost that counts the commands it runs (a spy on the real host: every call still runs)."""

    def __init__(self) -> None:
        super().__init__()
        self.commands = 0

    async def run(self, command: str, *, input: bytes | None = None, timeout: float | None = 30.0) -> CommandResult:
        self.commands += 1
        return await super().run(command, input=input, timeout=timeout)


async def test_a_ready_servers_look_reads_proc_here_as_its_shell_reads_it(sim: Sims, spawn: Spawner) -> None:
    """The settled look (a server ready at the last call): its known processes' liveness and the port's
    listeners, read from /proc here, are the lines the shell commands print; a reused pid (another start time),
    a pid that is gone and a zombie are told apart alike; and the look starts no process."""
    server = wait_ready(sim(speed=200.0, shards=4))
    log = str(server.log)
    _, _, found = run_now(probe_look.processes(NowHost(), server.port, log, None))
    assert found is not None
    zombie = spawn(["true"])  # exits and stays a zombie until reaped: its stat says Z
    while not Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(") ", 1)[1].startswith("Z"):
        await asyncio.sleep(0.01)
    known = {**dict(found.known), server.pid: dict(found.known)[server.pid]}
    known[zombie.pid] = int(Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(") ", 1)[1].split()[19])
    known[os.getpid()] = 12345  # this very pid, another start time: a reused pid is not the known process
    known[free_pid()] = 1  # gone
    shell = await LocalHost().run(cmds.known_live_command(known))
    here = now.known_live(known)
    assert steady(here) == steady(shell.stdout.decode())
    seen = cmds.parse_scan(here)
    assert (
        server.pid in seen
        and seen[zombie.pid].state == "Z"
        and os.getpid() not in seen
        and len(seen) == len(found.known) + 1
    )
    listeners = await LocalHost().run(cmds.listeners_command(server.port))
    assert now.listening(server.port) == listeners.stdout.decode() and now.listening(server.port).startswith("U ")
    counting = CountingNowHost()
    process, owner, again = run_now(probe_look.processes(counting, server.port, log, found, settled=True))
    assert counting.commands == 0 and process.alive and process.activity is None and again == found
    assert owner is not None and owner.ours is True
    server.stop()
    gone, _, _ = run_now(probe_look.processes(NowHost(), server.port, log, found, settled=True))
    assert not gone.alive


def steady(scan: str) -> str:
    """A scan's lines with a live process's state letter as "-": R, S or D is the moment each read was made (m64:
    the simulator ran as one read it and slept as the other). Z or X, a process that holds nothing, is kept: that
    is what the look tells apart."""
    return re.sub(r"^(P \d+ \d+ \d+ \d+) [^ZX\s] ", r"\1 - ", scan, flags=re.M)


def free_pid() -> int:
    """A pid no process has now."""
    pid = 4_000_000
    while Path(f"/proc/{pid}").exists():
        pid -= 1
    return pid


def test_run_now_refuses_a_look_that_waits_on_an_event_loop() -> None:
    @coroutine
    def waits():
        yield  # what awaiting a future does: hand the loop control

    async def look() -> int:
        await waits()
        return 1

    with pytest.raises(RuntimeError, match="without an event loop"):
        run_now(look())
