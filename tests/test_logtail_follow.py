"""LogTail when the name leaves the file the server writes (issue 17 cases 5, 6): a real writer process whose
stdout is the log (as `CMD > LOG`), the log moved, deleted or replaced under it; and what the path itself is
(missing, a directory, a symlink). Through LocalHost and a real sshd."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from tests.helpers.processes import Spawner
from tests.helpers.sshd import ssh_host
from tui.core.events import LogActivity, LogFile, LogReset
from tui.sources.host import Host
from tui.sources.local import LocalHost
from tui.sources.logtail import LogTail

# Numbered lines on stdout, one every 20 ms, until its stdin closes or it is killed.
WRITER = """import sys, time
n = 0
while True:
    sys.stdout.write(f"line {n:06d}\\n"); sys.stdout.flush(); n += 1; time.sleep(0.02)
"""


@pytest.fixture(params=["local", "ssh"])
async def host(request: pytest.FixtureRequest, spawn: Spawner) -> AsyncIterator[Host]:
    h: Host = LocalHost() if request.param == "local" else ssh_host(request.getfixturevalue("sshd"))
    await h.connect()
    yield h
    await h.close()


@pytest.fixture
def writer(spawn: Spawner):
    """Start a process whose stdout and stderr are LOG (opened once, as a shell's `> LOG 2>&1`)."""

    def start(log: Path, mode: str = "wb") -> subprocess.Popen[bytes]:
        with open(log, mode) as out:
            return spawn([sys.executable, "-c", WRITER], stdout=out, stderr=subprocess.STDOUT)

    return start


class Collector:
    def __init__(self, tail: LogTail) -> None:
        self.tail = tail
        self.data = b""
        self.resets: list[str] = []
        self.facts: list[LogFile] = []
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for event in self.tail.events():
            if isinstance(event, LogFile):
                self.facts.append(event)
            elif isinstance(event, LogReset):
                self.resets.append(event.reason)
            elif isinstance(event, LogActivity):
                self.data += event.data

    async def until(self, predicate: Callable[[], object], what: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if self.task.done():
                self.task.result()
            assert time.monotonic() < deadline, f"timed out waiting for {what}; facts={self.facts} resets={self.resets}"
            await asyncio.sleep(0.05)

    def lines(self) -> list[int]:
        return [int(line.split()[1]) for line in self.data.decode().splitlines() if line.startswith("line ")]

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def assert_exact(lines: list[int]) -> None:
    """Every line once, in order, from the first: nothing lost, nothing repeated."""
    assert lines == list(range(len(lines))), lines[:50]


def statuses(c: Collector) -> list[str]:
    return [f.status for f in c.facts]


async def test_mv_rotation_follows_the_servers_stdout_byte_exact(host: Host, tmp_path: Path, writer) -> None:
    log = tmp_path / "server.log"
    writer(log)
    c = Collector(LogTail(host, str(log)))
    try:
        await c.until(lambda: len(c.lines()) >= 20, "20 lines")
        os.rename(log, tmp_path / "server.log.1")  # logrotate without copytruncate: the writer keeps its fd
        seen = len(c.lines())
        await c.until(lambda: "rotated_following" in statuses(c), "the rotation to be said")
        await c.until(lambda: len(c.lines()) >= seen + 50, "lines written after the rotation")
        fact = next(f for f in c.facts if f.status == "rotated_following")
        assert fact.target == str(tmp_path / "server.log.1") and fact.path == str(log) and fact.pid is not None
        assert c.resets == [] and "missing" not in statuses(c)
        assert_exact(c.lines())
    finally:
        await c.close()


async def test_rotation_with_a_new_empty_log_keeps_to_the_file_the_server_writes(
    host: Host, tmp_path: Path, writer
) -> None:
    log = tmp_path / "server.log"
    writer(log)
    c = Collector(LogTail(host, str(log)))
    try:
        await c.until(lambda: len(c.lines()) >= 20, "20 lines")
        os.rename(log, tmp_path / "server.log.1")
        log.write_bytes(b"")  # logrotate's `create`: a new, empty file under the name nobody writes
        seen = len(c.lines())
        await c.until(lambda: len(c.lines()) >= seen + 50, "lines written after the rotation")
        assert "rotated_following" in statuses(c) and c.resets == []
        assert_exact(c.lines())
    finally:
        await c.close()


async def test_deleted_log_is_said_and_followed(host: Host, tmp_path: Path, writer) -> None:
    log = tmp_path / "server.log"
    proc = writer(log)
    c = Collector(LogTail(host, str(log)))
    try:
        await c.until(lambda: len(c.lines()) >= 20, "20 lines")
        log.unlink()
        seen = len(c.lines())
        await c.until(lambda: len(c.lines()) >= seen + 50, "lines written after the delete")
        fact = next(f for f in c.facts if f.status == "deleted_following")
        assert fact.pid == proc.pid and fact.target in (f"/proc/{proc.pid}/fd/1", f"/proc/{proc.pid}/fd/2")
        assert_exact(c.lines())
        # The writer ends; a new file appears under the name: that is a new start, read from its first byte.
        proc.kill()
        proc.wait()
        log.write_bytes(b"line 000000\nline 000001\n")
        await c.until(lambda: "rotated" in c.resets or "appeared" in c.resets, "the new file to be taken up")
    finally:
        await c.close()


async def test_what_the_path_is_is_said(host: Host, tmp_path: Path) -> None:
    missing = Collector(LogTail(host, str(tmp_path / "nope.log")))
    directory = Collector(LogTail(host, str(tmp_path)))
    target = tmp_path / "real.log"
    target.write_bytes(b"hello\n")
    (tmp_path / "link.log").symlink_to(target)
    link = Collector(LogTail(host, str(tmp_path / "link.log")))
    empty_path = tmp_path / "empty.log"
    empty_path.write_bytes(b"")
    empty = Collector(LogTail(host, str(empty_path)))
    try:
        await missing.until(lambda: statuses(missing) == ["missing"], "missing")
        await directory.until(lambda: statuses(directory) == ["directory"], "directory")
        await link.until(lambda: link.data == b"hello\n" and link.facts, "the symlink")
        assert link.facts[0].symlink == str(target)
        await empty.until(lambda: statuses(empty) == ["empty"], "empty")
        (tmp_path / "nope.log").write_bytes(b"now\n")
        await missing.until(lambda: missing.data == b"now\n", "the missing log to appear")
        assert statuses(missing) == ["missing", "ok"]
    finally:
        for c in (missing, directory, link, empty):
            await c.close()


async def test_a_followed_file_truncated_starts_again_from_its_first_byte(tmp_path: Path, writer) -> None:
    log = tmp_path / "server.log"
    writer(log, "ab")  # O_APPEND (as SGLang's own log handler): after a truncation it writes at the new end
    c = Collector(LogTail(LocalHost(), str(log)))
    try:
        await c.until(lambda: len(c.lines()) >= 20, "20 lines")
        rotated = tmp_path / "server.log.1"
        os.rename(log, rotated)
        await c.until(lambda: "rotated_following" in statuses(c), "the rotation to be said")
        os.truncate(rotated, 0)  # `: > LOG.1` under the writer
        await c.until(lambda: "truncated" in c.resets, "the truncation of the followed file")
        assert c.tail.offset <= rotated.stat().st_size
    finally:
        await c.close()
