"""LogTail against real files written by real processes, locally and through a real sshd."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from tests.helpers.processes import Spawner
from tests.helpers.sshd import Sshd, ssh_host
from tui.core.events import LogActivity, LogFile, LogLook, LogReset
from tui.sources.host import Host
from tui.sources.local import LocalHost
from tui.sources.logtail import LogTail
from tui.sources.ssh import SshHost

# A real writer process: appends log-like records (tqdm `\r` frames, an invalid byte, long lines) at a steady
# pace, flushing each one, like a redirected server does.
WRITER = r"""
import sys, time, random
path, count, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rng = random.Random(7)
with open(path, "ab", buffering=0) as f:
    for i in range(count):
        frames = b"".join(b"\rLoading shards: %3d%%|" % p + b"#" * rng.randint(0, 200) for p in range(0, 101, 25))
        f.write(b"[2025-11-29 10:00:%02d TP%d] record %d \xff " % (i % 60, i % 8, i) + b"z" * rng.randint(0, 3000) + frames + b"\n")
        time.sleep(pause)
"""


def tail_ssh_host(sshd: Sshd, **overrides: object) -> SshHost:
    """Fast keepalive and backoff, so link-loss tests take seconds."""
    return ssh_host(sshd, **{"keepalive": (1.0, 2), "backoff": (0.2, 1.0), **overrides})


@pytest.fixture(params=["local", "ssh"])
async def host(request: pytest.FixtureRequest, spawn: Spawner) -> AsyncIterator[Host]:
    h: Host = LocalHost() if request.param == "local" else tail_ssh_host(request.getfixturevalue("sshd"))
    await h.connect()
    yield h
    await h.close()


class Collector:
    """Runs a LogTail in a task and keeps what it yields."""

    def __init__(self, tail: LogTail) -> None:
        self.tail = tail
        self.events: list[LogActivity | LogReset] = []
        self.facts: list[LogFile] = []  # what the tail said about the path (missing, rotated and followed, …)
        self.looks: list[LogLook] = []  # each look at the file (its size, mtime, the host's clock)
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for event in self.tail.events():
            if isinstance(event, LogFile):
                self.facts.append(event)
            elif isinstance(event, LogLook):
                self.looks.append(event)
            else:
                self.events.append(event)

    def resets(self) -> list[str]:
        return [e.reason for e in self.events if isinstance(e, LogReset)]

    def data_since_last_reset(self) -> bytes:
        out = b""
        for event in self.events:
            if isinstance(event, LogReset):
                out = b""
            else:
                out += event.data
        return out

    async def until(self, predicate: Callable[[], bool], timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if self.task.done():
                self.task.result()
            assert time.monotonic() < deadline, f"timed out; resets={self.resets()} offset={self.tail.offset}"
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        self.task.cancel()
        try:
            await self.task
        except asyncio.CancelledError:
            pass


def start_writer(path: Path, count: int, pause: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(count), str(pause)])


async def test_follows_a_growing_file_byte_for_byte(host: Host, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"already there\n")
    tail = Collector(LogTail(host, str(log)))
    writer = start_writer(log, 40, 0.01)
    await asyncio.to_thread(writer.wait)
    await tail.until(lambda: tail.tail.offset == log.stat().st_size)
    await tail.stop()
    assert tail.resets() == []
    assert tail.data_since_last_reset() == log.read_bytes()
    offsets = [e.offset for e in tail.events if isinstance(e, LogActivity)]
    assert offsets == sorted(offsets) and offsets[-1] == log.stat().st_size


async def test_sshd_killed_mid_load_loses_and_repeats_nothing(fresh_sshd: Sshd, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.touch()  # there before the tail looks: a writer slow to start (a loaded machine) made it "missing", "appeared"
    host = tail_ssh_host(fresh_sshd)
    states: list[str] = []
    host.on_connection(lambda s: states.append(s.state))
    await host.connect()
    tail = Collector(LogTail(host, str(log), retry=(0.2, 1.0)))
    writer = start_writer(log, 150, 0.02)  # about 3 s of writing
    await tail.until(lambda: tail.tail.offset > 20_000)
    fresh_sshd.kill()
    await asyncio.sleep(0.6)  # the writer keeps appending while the link is down
    fresh_sshd.start()
    await asyncio.to_thread(writer.wait)
    await tail.until(lambda: tail.tail.offset == log.stat().st_size, timeout=30)
    await tail.stop()
    await host.close()
    assert "reconnecting" in states, states
    assert tail.resets() == []
    assert tail.data_since_last_reset() == log.read_bytes()


async def test_truncation_is_noticed_and_followed(host: Host, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"first launch line\n" * 50)
    tail = Collector(LogTail(host, str(log)))
    await tail.until(lambda: tail.tail.offset == log.stat().st_size)
    with open(log, "r+b") as f:  # truncate in place, as `: > log` does
        f.truncate(0)
    await asyncio.sleep(0.3)
    with open(log, "ab") as f:
        f.write(b"after truncation\n")
    await tail.until(lambda: "truncated" in tail.resets() and tail.data_since_last_reset() == log.read_bytes())
    await tail.stop()
    assert tail.resets() == ["truncated"]


async def test_rotation_is_noticed_and_the_new_file_followed(host: Host, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"before rotation\n" * 20)
    tail = Collector(LogTail(host, str(log)))
    await tail.until(lambda: tail.tail.offset == log.stat().st_size)
    log.rename(tmp_path / "server.log.1")
    log.write_bytes(b"fresh file\n")
    await tail.until(lambda: "rotated" in tail.resets() and tail.data_since_last_reset() == log.read_bytes())
    with open(log, "ab") as f:
        f.write(b"more in the fresh file\n")
    await tail.until(lambda: tail.data_since_last_reset() == log.read_bytes())
    await tail.stop()


async def test_a_second_launch_appended_is_just_more_bytes(host: Host, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"[2025-11-29 10:00:02] server_args=ServerArgs(model_path='a', tp_size=8)\nfired up\n")
    tail = Collector(LogTail(host, str(log)))
    await tail.until(lambda: tail.tail.offset == log.stat().st_size)
    with open(log, "ab") as f:
        f.write(b"[2025-11-29 11:00:02] server_args=ServerArgs(model_path='b', tp_size=8)\n")
    await tail.until(lambda: tail.tail.offset == log.stat().st_size)
    await tail.stop()
    assert tail.resets() == []
    assert tail.data_since_last_reset() == log.read_bytes()


async def test_missing_log_is_waited_for(host: Host, tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    tail = Collector(LogTail(host, str(log)))
    await tail.until(lambda: tail.resets() == ["missing"])
    await asyncio.sleep(0.5)
    assert tail.resets() == ["missing"]  # reported once, not once per look
    log.write_bytes(b"now it exists\n")
    await tail.until(lambda: tail.data_since_last_reset() == log.read_bytes())
    await tail.stop()
    assert tail.resets() == ["missing", "appeared"]


async def test_big_log_starts_at_the_last_launch(host: Host, tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    filler = b"[2025-11-29 09:00:00 TP0] Decode batch. #running-req: 1, server_args= not at line start\n" * 40_000
    last = b"[2025-11-29 10:00:02] server_args=ServerArgs(model_path='m', tp_size=8)\n"
    with open(log, "wb") as f:
        f.write(b"[2025-11-29 08:00:00] server_args={'model_path': 'old'}\n")
        f.write(filler)
        start = f.tell()
        f.write(last + b"[2025-11-29 10:00:03 TP0] Init torch distributed begin.\n")
    assert log.stat().st_size > 2 * 1024 * 1024
    tail = Collector(LogTail(host, str(log)))
    await tail.until(lambda: tail.tail.offset == log.stat().st_size)
    await tail.stop()
    assert tail.resets() == ["started_at_last_launch"]
    assert tail.data_since_last_reset() == log.read_bytes()[start:]


async def test_metacharacter_log_path_is_read_as_a_path(host: Host, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    weird = tmp_path / f"x $(touch pwned-{tag}) 'q\" ;y"
    weird.mkdir()
    log = weird / f"s `touch pwned2-{tag}` $HOME *.log"
    log.write_bytes(b"metachar content\n")
    tail = Collector(LogTail(host, str(log)))
    await tail.until(lambda: tail.data_since_last_reset() == b"metachar content\n")
    await tail.stop()
    for where in (Path.home(), Path.cwd(), Path("/")):
        assert not (where / f"pwned-{tag}").exists()
        assert not (where / f"pwned2-{tag}").exists()


async def test_no_tail_outlives_its_channel(host: Host, tmp_path: Path) -> None:
    log = tmp_path / f"alone-{uuid.uuid4().hex}.log"
    log.write_bytes(b"x\n")
    tail = Collector(LogTail(host, str(log)))
    await tail.until(lambda: tail.tail.offset == 2)
    assert _tails_of(log)
    await tail.stop()
    for _ in range(50):
        if not _tails_of(log):
            break
        await asyncio.sleep(0.1)
    assert _tails_of(log) == []


def _tails_of(path: Path) -> list[str]:
    out = subprocess.run(["pgrep", "-a", "-x", "tail"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(path) in line]


async def test_no_tail_outlives_a_dead_link(fresh_sshd: Sshd, tmp_path: Path) -> None:
    log = tmp_path / f"dead-link-{uuid.uuid4().hex}.log"
    log.write_bytes(b"x\n")
    host = tail_ssh_host(fresh_sshd)
    await host.connect()
    tail = Collector(LogTail(host, str(log)))
    await tail.until(lambda: tail.tail.offset == 2)
    fresh_sshd.kill()
    for _ in range(50):
        if not _tails_of(log):
            break
        await asyncio.sleep(0.1)
    assert _tails_of(log) == []
    await tail.stop()
    await host.close()
    assert os.path.exists(log)


async def test_rewritten_while_disconnected_is_a_truncation(fresh_sshd: Sshd, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"first launch\n" * 20)
    host = tail_ssh_host(fresh_sshd)
    await host.connect()
    tail = Collector(LogTail(host, str(log), retry=(0.2, 1.0)))
    await tail.until(lambda: tail.tail.offset == log.stat().st_size)
    fresh_sshd.kill()
    with open(log, "r+b") as f:  # same inode, and longer than before: size and inode cannot tell
        f.truncate(0)
        f.write(b"second launch, a longer line than any before\n" * 20)
    fresh_sshd.start()
    await tail.until(lambda: "truncated" in tail.resets() and tail.data_since_last_reset() == log.read_bytes(), 30)
    await tail.stop()
    await host.close()
