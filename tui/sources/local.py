"""LocalHost: the Host interface on this machine (`sh -c` subprocesses, direct TCP for HTTP: 127.0.0.1, or
[::1] for a server that listens only there).

Every command runs in its own session (process group), so closing it kills the whole command tree it
started, never anything else. Processes are spawned with subprocess.Popen and watched through a pidfd,
because cancelling asyncio.create_subprocess_exec mid-start hangs the event loop on Python 3.11.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from functools import partial

from tui.core.events import ConnectionState
from tui.sources.bounded import within
from tui.sources.host import CommandResult, Host, HostError, RemoteProcess
from tui.sources.loopback import loopback_for

__all__ = ["LocalHost", "LocalProcess", "loopback_for"]

_KILL_GRACE_S = 1.0


class _Child:
    """One `sh -c` process in its own session: stdout/stderr as StreamReaders, exit as a future."""

    def __init__(self, popen: subprocess.Popen[bytes], loop: asyncio.AbstractEventLoop) -> None:
        self.popen = popen
        self.loop = loop
        self.stdout = asyncio.StreamReader(limit=2**24, loop=loop)
        self.stderr = asyncio.StreamReader(limit=2**24, loop=loop)
        self.exited: asyncio.Future[int] = loop.create_future()
        self._transports: list[asyncio.BaseTransport] = []
        self.stdin: asyncio.StreamWriter | None = None
        try:
            self._pidfd = os.pidfd_open(popen.pid)
        except (AttributeError, OSError):  # no pidfd (old kernel, sandbox): look every 50 ms instead
            self._pidfd = -1
            self._poll_exit()
        else:
            loop.add_reader(self._pidfd, self._on_exit)

    async def connect(self, input: bytes | None, keep_stdin: bool) -> None:
        for pipe, reader in ((self.popen.stdout, self.stdout), (self.popen.stderr, self.stderr)):
            transport, _ = await self.loop.connect_read_pipe(partial(asyncio.StreamReaderProtocol, reader), pipe)
            self._transports.append(transport)
        if self.popen.stdin is None:
            return
        writer, protocol = await self.loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(), self.popen.stdin
        )
        self._transports.append(writer)
        self.stdin = asyncio.StreamWriter(writer, protocol, None, self.loop)
        if input is not None:
            self.stdin.write(input)
            try:
                await self.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass
        if input is not None or not keep_stdin:
            self.stdin.close()

    def _on_exit(self) -> None:
        returncode = self.popen.poll()
        if returncode is None:
            return
        self._release_pidfd()
        if not self.exited.done():
            self.exited.set_result(returncode)

    def _poll_exit(self) -> None:
        self._on_exit()
        if not self.exited.done():
            self.loop.call_later(0.05, self._poll_exit)

    def _release_pidfd(self) -> None:
        if self._pidfd >= 0:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = -1

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    async def stop(self) -> None:
        """TERM the command's group, KILL it if it lingers, reap it, close our ends of the pipes."""
        if not self.exited.done():
            self.signal_group(signal.SIGTERM)
            # asyncio.wait, not wait_for: on Python 3.11 wait_for returns the result, dropping a cancel that
            # comes as the command exits; the watch loop cancelled then went on to start another command.
            await asyncio.wait({self.exited}, timeout=_KILL_GRACE_S)
        # The leader may be gone while others of its group still run (e.g. `a | b`, a backgrounded helper).
        self.signal_group(signal.SIGKILL)
        if not self.exited.done():
            await asyncio.shield(self.exited)
        self.close_pipes()

    def close_pipes(self) -> None:
        for transport in self._transports:
            transport.close()
        for pipe in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()

    def abandon(self) -> None:
        """Synchronous cleanup for a start that was cancelled: kill the group, forget everything."""
        self.signal_group(signal.SIGKILL)
        self.close_pipes()
        try:
            self.popen.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        self._release_pidfd()


async def _spawn(command: str, input: bytes | None, keep_stdin: bool) -> _Child:
    try:
        popen = subprocess.Popen(
            ["sh", "-c", command],
            stdin=subprocess.PIPE if (input is not None or keep_stdin) else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise HostError(f"cannot start a local shell: {exc}") from exc
    child = _Child(popen, asyncio.get_running_loop())
    try:
        await child.connect(input, keep_stdin)
    except BaseException:
        child.abandon()
        raise
    return child


class LocalProcess(RemoteProcess):
    """A long-running local `sh -c` command with stdout/stderr as bytes."""

    def __init__(self, child: _Child, owner: LocalHost) -> None:
        self._child = child
        self._owner = owner

    @property
    def pid(self) -> int:
        return self._child.popen.pid

    async def read(self, n: int = 65536) -> bytes:
        return await self._child.stdout.read(n)

    async def read_stderr(self, n: int = 65536) -> bytes:
        return await self._child.stderr.read(n)

    async def wait(self) -> int | None:
        return await asyncio.shield(self._child.exited)

    async def write(self, data: bytes) -> None:
        stdin = self._child.stdin
        if stdin is None or stdin.is_closing():
            raise HostError("the command's stdin is closed")
        stdin.write(data)
        try:
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise HostError(f"the command's stdin is closed ({exc})") from None

    async def close(self) -> None:
        self._owner._live.discard(self)
        await self._child.stop()


class LocalHost(Host):
    """This machine: no SSH, HTTP straight to 127.0.0.1 (or [::1], see loopback_for)."""

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

    async def run(self, command: str, *, input: bytes | None = None, timeout: float | None = 30.0) -> CommandResult:
        child = await _spawn(command, input, keep_stdin=False)

        async def finish() -> tuple[bytes, bytes, int]:
            out, err = await asyncio.gather(child.stdout.read(), child.stderr.read())
            return out, err, await asyncio.shield(child.exited)

        try:
            stdout, stderr, returncode = await within(finish(), timeout)
        except asyncio.TimeoutError:
            await child.stop()
            raise TimeoutError(f"command timed out after {timeout} s") from None
        except BaseException:
            child.abandon()
            raise
        child.close_pipes()
        return CommandResult(returncode, stdout, stderr)

    async def start(self, command: str, *, input: bytes | None = None) -> RemoteProcess:
        # Without input, stdin stays an open pipe until close() (like an SSH channel), so a command can
        # watch it to notice that its reader went away.
        child = await _spawn(command, input, keep_stdin=True)
        process = LocalProcess(child, self)
        self._live.add(process)
        return process

    async def http_base_url(self, port: int) -> str:
        return f"http://{loopback_for(int(port))}:{int(port)}"

    async def url_to(self, host: str, port: int) -> str:
        return f"http://{host}:{int(port)}"
