"""MuxHost: the Host interface through ONE long-lived mux agent (tui/sources/mux_agent.py) started by a
launcher command on another Host; every command runs in the agent as `sh -c CMD` in its own session.

This is how a Slurm node is reached (tui/sources/slurm.py): the launcher is `srun --jobid=J --overlap -w NODE
… sh -c 'exec PYTHON -u -c BOOT'`, so the log tail, the GPU probe, the process watch and every short command
of that node share one job step instead of one each. The agent is started on the first use, and again on
the next use after it died (the job step ended, the link to the login node dropped).
"""

from __future__ import annotations

import asyncio
import base64
import json
import shlex
from collections.abc import Callable
from pathlib import Path

from tui.core.events import ConnectionState
from tui.sources.bounded import within
from tui.sources.host import CommandResult, Host, HostError, HostUnreachable, RemoteProcess

AGENT_PATH = Path(__file__).with_name("mux_agent.py")
HELLO_TIMEOUT_S = 60.0  # srun may have to wait for slurmctld on a busy cluster
_CHUNK = 16384

# Read exactly N bytes of the agent's source from stdin, then run it: the rest of stdin is the protocol.
_BOOT = """import os, sys
n = {size}
b = b""
while len(b) < n:
    c = os.read(0, n - len(b))
    if not c:
        sys.exit(3)
    b += c
exec(compile(b, "sglang-tui-mux-agent", "exec"))"""


def agent_script() -> bytes:
    return AGENT_PATH.read_bytes()


def agent_command(remote_python: str = "python3") -> str:
    """`exec PYTHON -u -c BOOT` (every word quoted): the agent's source follows on stdin."""
    boot = _BOOT.format(size=len(agent_script()))
    return f"exec {shlex.quote(remote_python)} -u -c {shlex.quote(boot)}"


class MuxGone(HostUnreachable):
    """The agent ended (its launcher's stderr says why): the commands it ran are gone with it."""


class _Channel:
    """One command in the agent: its output so far, its exit status when it ended."""

    def __init__(self, cid: int) -> None:
        self.cid = cid
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.changed = asyncio.Event()
        self.exited: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        self.error: HostError | None = None

    def push(self, kind: str, data: bytes) -> None:
        (self.stdout if kind == "o" else self.stderr).extend(data)
        self.changed.set()

    def end(self, returncode: int | None, error: HostError | None = None) -> None:
        self.error = error
        if not self.exited.done():
            self.exited.set_result(returncode)
        self.changed.set()


class MuxProcess(RemoteProcess):
    """A long-running command in the agent."""

    def __init__(self, host: MuxHost, chan: _Channel) -> None:
        self._host = host
        self._chan = chan

    async def _take(self, buf: bytearray, n: int) -> bytes:
        while True:
            if buf:
                data = bytes(buf[:n])
                del buf[:n]
                return data
            if self._chan.exited.done():
                if self._chan.error is not None:
                    raise self._chan.error
                return b""
            self._chan.changed.clear()
            await self._chan.changed.wait()

    async def read(self, n: int = 65536) -> bytes:
        return await self._take(self._chan.stdout, n)

    async def read_stderr(self, n: int = 65536) -> bytes:
        return await self._take(self._chan.stderr, n)

    async def wait(self) -> int | None:
        return await asyncio.shield(self._chan.exited)

    async def write(self, data: bytes) -> None:
        await self._host._stdin(self._chan, data)

    async def close(self) -> None:
        await self._host._stop(self._chan)


class MuxHost(Host):
    """Commands run by one agent that `launcher` starts on `base` (the launcher gets the agent's source on
    stdin and must exec `agent_command()` on the far side)."""

    def __init__(self, base: Host, launcher: str, *, name: str, describe: Callable[[str], str] | None = None) -> None:
        self.name = name
        self.base = base
        self.launcher = launcher
        self._describe = describe or (lambda stderr: stderr)
        self._proc: RemoteProcess | None = None
        self._reader: asyncio.Task[None] | None = None
        self._channels: dict[int, _Channel] = {}
        self._next = 0
        self._lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()
        self._closed = False
        self._up = False
        self.agent_pid: int | None = None

    # ------------------------------------------------------------------------------------------ the agent

    async def connect(self) -> None:
        self._closed = False
        await self._ensure()

    async def _ensure(self) -> RemoteProcess:
        async with self._lock:
            if self._proc is not None and self._reader is not None and not self._reader.done():
                return self._proc
            if self._closed:
                raise HostError(f"{self.name}: closed")
            self._emit_connection(ConnectionState("connecting", self.name))
            await self.base.connect()
            proc = await self.base.start(self.launcher)
            try:
                await proc.write(agent_script())
                hello = await within(self._hello(proc), HELLO_TIMEOUT_S)
            except asyncio.TimeoutError:
                why = await self._why(proc)
                await proc.close()
                raise HostUnreachable(f"{self.name}: no answer within {HELLO_TIMEOUT_S:g} s{why}") from None
            except (HostError, OSError):
                why = await self._why(proc)
                await proc.close()
                raise self._gone(why) from None
            except BaseException:
                await proc.close()
                raise
            self.agent_pid, leftover = hello
            self._proc = proc
            self._reader = asyncio.get_running_loop().create_task(self._read(proc, leftover))
            self._up = True
            self._emit_connection(ConnectionState("connected", self.name))
            return proc

    def _gone(self, why: str) -> HostError:
        """The error for an agent that ended or never started; a subclass says what its launcher's words mean."""
        return MuxGone(f"{self.name}: the command runner ended{why}")

    async def _why(self, proc: RemoteProcess) -> str:
        try:
            err = await within(proc.read_stderr(), 5.0)
        except (asyncio.TimeoutError, HostError, OSError):
            return ""
        text = "".join(c if c.isprintable() else "?" for c in " ".join(err.decode("utf-8", "replace").split())[:300])
        return f": {self._describe(text)}" if text else ""

    @staticmethod
    async def _hello(proc: RemoteProcess) -> tuple[int, bytes]:
        buf = b""
        while b"\n" not in buf:
            data = await proc.read()
            if not data:
                raise MuxGone("ended before it said hello")
            buf += data
        line, _, rest = buf.partition(b"\n")
        words = line.decode("ascii", "replace").split()
        if len(words) < 2 or words[0] != "H" or not words[1].isdigit():
            raise MuxGone(f"answered {line[:80]!r} instead of hello")
        return int(words[1]), rest

    async def _read(self, proc: RemoteProcess, buf: bytes) -> None:
        error: HostError = MuxGone(f"{self.name}: the command runner ended")
        try:
            while True:
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    self._dispatch(line)
                data = await proc.read()
                if not data:
                    break
                buf += data
        except HostError as exc:
            error = exc if isinstance(exc, HostUnreachable) else HostUnreachable(str(exc))
        except asyncio.CancelledError:
            error = HostUnreachable(f"{self.name}: closed")
        if not self._closed:
            why = await self._why(proc)
            if why:
                error = self._gone(why)
        self._up = False
        for chan in list(self._channels.values()):
            chan.end(None, error)
        self._channels.clear()
        if not self._closed:
            self._emit_connection(ConnectionState("reconnecting", str(error)))

    def _dispatch(self, raw: bytes) -> None:
        words = raw.decode("ascii", "replace").split(" ")
        if len(words) < 2 or not words[1].isdigit():
            return
        chan = self._channels.get(int(words[1]))
        if chan is None:
            return
        kind = words[0]
        if kind in ("o", "e") and len(words) == 3:
            chan.push(kind, base64.b64decode(words[2]))
        elif kind == "x" and len(words) == 3:
            self._channels.pop(chan.cid, None)
            code = words[2].lstrip("-")
            chan.end(int(words[2]) if code.isdigit() else None)
        elif kind == "!" and len(words) == 3:
            self._channels.pop(chan.cid, None)
            text = base64.b64decode(words[2]).decode("utf-8", "replace")
            chan.end(None, HostError(f"{self.name}: cannot start the command: {text}"))

    async def _send(self, line: str) -> None:
        proc = self._proc
        if proc is None or not self._up:
            raise HostUnreachable(f"{self.name}: the command runner is not running")
        async with self._write_lock:
            await proc.write(line.encode("ascii") + b"\n")

    # ---------------------------------------------------------------------------------------- channels

    async def _open(self, command: str, *, stdin: bool) -> _Channel:
        await self._ensure()
        self._next += 1
        chan = _Channel(self._next)
        self._channels[chan.cid] = chan
        spec = base64.b64encode(json.dumps({"cmd": command, "stdin": stdin}).encode()).decode("ascii")
        try:
            await self._send(f"O {chan.cid} {spec}")
        except BaseException:
            self._channels.pop(chan.cid, None)
            raise
        return chan

    async def _stdin(self, chan: _Channel, data: bytes, *, eof: bool = False) -> None:
        for at in range(0, len(data), _CHUNK):
            await self._send(f"I {chan.cid} {base64.b64encode(data[at : at + _CHUNK]).decode('ascii')}")
        if eof:
            await self._send(f"E {chan.cid}")

    async def _stop(self, chan: _Channel, wait: float = 5.0) -> None:
        if chan.exited.done():
            return
        try:
            await self._send(f"K {chan.cid}")
            await asyncio.wait(
                {chan.exited}, timeout=wait
            )  # not wait_for: 3.11's drops a cancel that comes as it exits
        except (HostError, OSError):
            pass
        self._channels.pop(chan.cid, None)
        chan.end(None)

    async def run(self, command: str, *, input: bytes | None = None, timeout: float | None = 30.0) -> CommandResult:
        chan = await self._open(command, stdin=input is not None)
        try:
            if input is not None:
                await self._stdin(chan, input, eof=True)
            returncode = await within(asyncio.shield(chan.exited), timeout)
        except asyncio.TimeoutError:
            await self._stop(chan)
            raise TimeoutError(f"command timed out after {timeout} s") from None
        except BaseException:
            await self._stop(chan)
            raise
        if chan.error is not None:
            raise chan.error
        return CommandResult(returncode, bytes(chan.stdout), bytes(chan.stderr))

    async def start(self, command: str, *, input: bytes | None = None) -> RemoteProcess:
        chan = await self._open(command, stdin=True)
        if input is not None:
            await self._stdin(chan, input, eof=True)
        return MuxProcess(self, chan)

    async def http_base_url(self, port: int) -> str:
        raise HostError(f"{self.name}: no HTTP route to port {port}")

    async def close(self) -> None:
        self._closed = True
        # at once: an agent with many commands running (a fleet's every tail and watch) stops them in one wait
        await asyncio.gather(*(self._stop(chan, wait=2.0) for chan in list(self._channels.values())))
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                async with self._write_lock:
                    await proc.write(b"Q\n")
                await within(proc.wait(), 5.0)
            except (HostError, OSError, asyncio.TimeoutError):
                pass
            await proc.close()
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
            self._reader = None
        self._up = False
