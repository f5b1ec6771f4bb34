"""Fault: the network stalls (the SSH connection stays open but nothing answers), through a real sshd.

The stall is made real by SIGSTOP-ing every process of the live SSH session on the host (the per-connection
sshd processes and the commands under them), so the TCP connection is up but silent, as on a dead link or a
frozen host. The listener keeps running, so a new connection can be made once the old one is declared dead.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.sshd import Sshd
from tui.core.events import LogActivity, LogFile, LogLook, LogReset
from tui.sources.logtail import LogTail
from tui.sources.ssh import SshHost

WRITER = r"""
import sys, time
path, count, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with open(path, "ab", buffering=0) as f:
    for i in range(count):
        f.write(b"[2025-11-29 10:00:%02d TP%d] record %d \xfe " % (i % 60, i % 8, i) + b"x" * (i * 37 % 2000) + b"\n")
        time.sleep(pause)
"""


def session_pids(sshd: Sshd) -> list[int]:
    """Every process under the sshd listener (the live sessions and their commands), not the listener."""
    assert sshd.proc is not None
    found, todo = [], [sshd.proc.pid]
    while todo:
        out = subprocess.run(["pgrep", "-P", str(todo.pop())], capture_output=True, text=True).stdout.split()
        kids = [int(p) for p in out]
        found += kids
        todo += kids
    return found


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


async def test_stalled_link_is_declared_dead_and_the_tail_resumes_byte_for_byte(
    fresh_sshd: Sshd, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"before the stall\n")
    host = SshHost("127.0.0.1", port=fresh_sshd.port, user=fresh_sshd.user, identity=str(fresh_sshd.identity),
                   known_hosts=str(fresh_sshd.known_hosts), agent=False, keepalive=(0.5, 2), backoff=(0.2, 1.0))  # fmt: skip
    states: list[str] = []
    host.on_connection(lambda s: states.append(s.state))
    await host.connect()
    events: list[LogActivity | LogReset | LogFile | LogLook] = []
    tail = LogTail(host, str(log), retry=(0.2, 1.0))

    async def collect() -> None:
        async for event in tail.events():
            events.append(event)

    task = asyncio.create_task(collect())
    stopped: list[int] = []
    try:
        deadline = time.monotonic() + 15
        while tail.offset < log.stat().st_size:
            assert time.monotonic() < deadline, "the tail never started"
            await asyncio.sleep(0.05)
        stopped = session_pids(fresh_sshd)
        assert stopped, "no SSH session processes to stall"
        signal_all(stopped, signal.SIGSTOP)  # the link is now silent: open, but nothing answers
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(log), "60", "0.05"])  # 3 s of appends
        await asyncio.to_thread(writer.wait)
        deadline = time.monotonic() + 30
        while tail.offset < log.stat().st_size:
            assert time.monotonic() < deadline, f"not resumed after the stall: states={states} offset={tail.offset}"
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await host.close()
        signal_all(stopped, signal.SIGKILL)  # the frozen session goes for good (SIGKILL ends stopped processes)
    assert "reconnecting" in states, states
    assert [e for e in events if isinstance(e, LogReset)] == []
    assert b"".join(e.data for e in events if isinstance(e, LogActivity)) == log.read_bytes()
