"""LocalHost: the Host interface on this machine (asyncio subprocesses running `sh -c`, direct TCP for HTTP).

Every command runs in its own session (process group), so closing it kills the whole command tree it
started, never anything else.
"""

from __future__ import annotations

import asyncio
import os
import signal
from asyncio.subprocess import PIPE, DEVNULL, Process

from tui.core.events import ConnectionState
from tui.sources.host import CommandResult, Host, HostError, RemoteProcess

_KILL_GRACE_S = 1.0


def _kill_group(proc: Process, sig: int) -> None:
    """Signal the process group the command leads (it was started with start_new_session)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def _stop(proc: Process) -> None:
    """TERM the command's group, then KILL it if it lingers; always reap the process."""
    if proc.returncode is None:
        _kill_group(proc, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), _KILL_GRACE_S)
        except asyncio.TimeoutError:
            pass
    # The leader may have exited while children of its group still run (e.g. `a | b`).
    _kill_group(proc, signal.SIGKILL)
    if proc.returncode is None:
        await proc.wait()


class LocalProcess(RemoteProcess):
    """A long-running local `sh -c` command with stdout/stderr as bytes."""

    def __init__(self, proc: Process, owner: "LocalHost") -> None:
        self._proc = proc
        self._owner = owner

    @property
    def pid(self) -> int:
        return self._proc.pid

    async def read(self, n: int = 65536) -> bytes:
        assert self._proc.stdout is not None
        return await self._proc.stdout.read(n)

    async def read_stderr(self, n: int = 65536) -> bytes:
        assert self._proc.stderr is not None
        return await self._proc.stderr.read(n)

    async def wait(self) -> int | None:
        return await self._proc.wait()

    async def close(self) -> None:
        self._owner._live.discard(self)
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            self._proc.stdin.close()
        await _stop(self._proc)


class LocalHost(Host):
    """This machine: no SSH, HTTP straight to 127.0.0.1."""

    def __init__(self) -> None:
        self.name = "local"
        self._live: set[LocalProcess] = set()
        self._connected = False

    async def connect(self) -> None:
        if not self._connected:
            self._connected = True
            self._emit_connection(ConnectionState("connected", "local"))

    async def close(self) -> None:
        for proc in list(self._live):
            await proc.close()
        self._connected = False

    async def _spawn(self, command: str, stdin_pipe: bool) -> Process:
        try:
            return await asyncio.create_subprocess_exec(
                "sh", "-c", command,
                stdin=PIPE if stdin_pipe else DEVNULL, stdout=PIPE, stderr=PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise HostError(f"cannot start a local shell: {exc}") from exc

    async def run(self, command: str, *, input: bytes | None = None, timeout: float | None = 30.0) -> CommandResult:
        proc = await self._spawn(command, input is not None)
        try:
            stdout, stderr = await asyncio.wait_for(proc.communicate(input), timeout)
        except asyncio.TimeoutError:
            await _stop(proc)
            raise TimeoutError(f"command timed out after {timeout} s") from None
        except BaseException:
            await _stop(proc)
            raise
        return CommandResult(proc.returncode, stdout, stderr)

    async def start(self, command: str, *, input: bytes | None = None) -> RemoteProcess:
        # stdin stays an open pipe until close() (like an SSH channel), so a command can watch it to
        # notice that its reader went away.
        proc = await self._spawn(command, True)
        assert proc.stdin is not None
        if input is not None:
            try:
                proc.stdin.write(input)
                await proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass
            proc.stdin.close()
        process = LocalProcess(proc, self)
        self._live.add(process)
        return process

    async def http_base_url(self, port: int) -> str:
        return f"http://127.0.0.1:{int(port)}"
