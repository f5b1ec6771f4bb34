"""NowHost: this machine for one look by a process that runs no event loop (`probe local`, issue 32).

A probe is a fresh process per call, and asyncio's import (ssl, concurrent.futures and logging come with it) was
a tenth of its cost. The look itself is written once against Host, as coroutines (tui.sources.probe_look, the
process watch), for SSH hosts too; NowHost's coroutines never suspend: each does its work blocking and returns.
So `run_now` drives a whole look to its end with one `send`, and the same code makes the same batch of events
for the same fold as on an event loop. The log is read with plain file IO (no shell, no stat/date/tail/od
children); /health is one blocking socket with its own deadline (BlockingStream); the process scan is the same
sh command as everywhere (its awk logic lives once, in tui.sources.control_cmds). A server ready at the last
look needs no scan, only whether its known processes live and who listens on its port: those two facts are read
here from /proc (known_live, listening), in the lines their commands print, so that one parser reads both and a
ready server's call starts no process at all.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from tui.sources.host import CommandResult, Host, HostError, RemoteProcess
from tui.sources.logtail import END_BYTES, FileId, Look
from tui.sources.loopback import loopback_for

T = TypeVar("T")


def run_now(coro: Coroutine[Any, Any, T]) -> T:
    """The coroutine's result, driven without an event loop: it must never wait on one (RuntimeError if it
    does: a look that suspends needs asyncio.run)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("a look meant to run without an event loop waited on one")


class NowHost(Host):
    """This machine, each call done before it returns (see the module's docstring)."""

    def __init__(self) -> None:
        self.name = "local"

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        return None  # run() leaves nothing running: each command is waited for or killed

    async def run(self, command: str, *, input: bytes | None = None, timeout: float | None = 30.0) -> CommandResult:
        """As LocalHost.run: `sh -c` in a session of its own, its group killed when it runs past the timeout."""
        import subprocess  # here: a ready server's look runs no command, and subprocess brings threading, signal

        try:
            child = subprocess.Popen(
                ["sh", "-c", command],
                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise HostError(f"cannot start a local shell: {exc}") from exc
        try:
            stdout, stderr = child.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(child.pid)
            child.communicate()
            raise TimeoutError(f"command timed out after {timeout} s") from None
        except BaseException:
            _kill_group(child.pid)
            child.wait()
            raise
        return CommandResult(child.returncode, stdout, stderr)

    async def start(self, command: str, *, input: bytes | None = None) -> RemoteProcess:
        raise HostError("one look starts nothing that stays (a watcher uses LocalHost)")

    async def http_base_url(self, port: int) -> str:
        return f"http://{loopback_for(int(port))}:{int(port)}"

    def look_at(self, path: str, *, at: int = 0, tail_bytes: int = 0) -> tuple[Look, bytes | None]:
        """What tui.sources.logtail's look_command says of the name, read here (its Look), and with tail_bytes
        the bytes just before offset `at` (None without), read first as the command reads them."""
        tail = _read(path, at - tail_bytes, tail_bytes) if tail_bytes and at >= tail_bytes else None
        symlink = os.path.realpath(path) if os.path.islink(path) else None
        if os.path.isdir(path):
            return Look("directory", None, symlink, True, time.time()), tail
        try:
            info = os.stat(path)
        except PermissionError:
            return Look("denied", None, symlink, False, time.time()), tail
        except OSError:
            return Look("missing", None, symlink, True, time.time()), tail
        file = FileId(str(info.st_ino), info.st_size, str(info.st_dev), info.st_mtime_ns / 1e9)
        readable = os.access(path, os.R_OK)
        host_now = time.time()
        regular = os.path.isfile(path)
        end = _read(path, max(0, info.st_size - END_BYTES), END_BYTES) if regular and readable else b""
        return Look("file", file, symlink, readable, host_now, end or b""), tail

    def read_bytes(self, path: str, start: int, limit: int) -> bytes:
        """At most `limit` bytes of the file from byte `start` (b"" when it cannot be read)."""
        return _read(path, start, limit) or b""

    def open_stream(self, host: str, port: int, deadline: float) -> BlockingStream:
        """A connection to HOST:PORT. An address (http_base_url's loopback) is connected to as it is: a name
        lookup would load the idna codec (encodings.idna, stringprep, unicodedata), for nothing."""
        family = _address_family(host)
        if family is None:
            return BlockingStream(socket.create_connection((host, port), timeout=_left(deadline)), deadline)
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(_left(deadline))
            sock.connect((host, port))
        except BaseException:
            sock.close()
            raise
        return BlockingStream(sock, deadline)


def known_live(known: dict[int, int]) -> str:
    """tui.sources.control_cmds.known_live_command's lines, read here: `P pid ppid pgid sid state start` for each
    known (pid, start) still that very process."""
    lines = []
    for pid, start in sorted(known.items()):
        if pid <= 1:
            continue
        stat = _read(f"/proc/{pid}/stat", 0, 4096).decode("ascii", "replace")
        fields = stat[stat.rfind(") ") + 2 :].split() if ") " in stat else []
        if len(fields) >= 20 and fields[19] == str(start):
            lines.append(f"P {pid} {fields[1]} {fields[2]} {fields[3]} {fields[0]} {fields[19]}")
    return "".join(line + "\n" for line in lines)


def listening(port: int) -> str:
    """tui.sources.control_cmds.listeners_command's lines, read here: `U UID INODE` per socket listening on PORT
    (state 0A in /proc/net/tcp and tcp6)."""
    hexport = f"{int(port):04X}"
    lines = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in _read(table, 0, 1 << 24).decode("ascii", "replace").splitlines()[1:]:
            cols = row.split()
            if len(cols) >= 10 and cols[3] == "0A" and cols[1].rsplit(":", 1)[-1] == hexport:
                lines.append(f"U {cols[7]} {cols[9]}")
    return "".join(line + "\n" for line in lines)


def _address_family(host: str) -> socket.AddressFamily | None:
    """AF_INET or AF_INET6 for an address; None for a name."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        socket.inet_pton(family, host)
    except OSError:
        return None
    return family


def _read(path: str, start: int, size: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, start))
            return f.read(max(0, size))
    except OSError:
        return b""


def _kill_group(pid: int) -> None:
    import signal

    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no answer in time")
    return left


class BlockingStream:
    """A TCP connection with asyncio's StreamReader/StreamWriter calls that tui.sources.probe_look uses, each
    done before it returns, all within one deadline (TimeoutError past it; EOFError for a short readexactly,
    as asyncio.IncompleteReadError is one)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._file = sock.makefile("rb")
        self._deadline = deadline

    def write(self, data: bytes) -> None:
        self._sock.settimeout(_left(self._deadline))
        self._sock.sendall(data)

    async def drain(self) -> None:
        return None

    async def readline(self) -> bytes:
        self._sock.settimeout(_left(self._deadline))
        return self._file.readline()

    async def readexactly(self, n: int) -> bytes:
        self._sock.settimeout(_left(self._deadline))
        data = self._file.read(n)
        if len(data) < n:
            raise EOFError(f"{len(data)} bytes read of {n}")
        return data

    async def read(self, n: int) -> bytes:
        """What one receive gives (at most n bytes), as StreamReader.read."""
        self._sock.settimeout(_left(self._deadline))
        return self._file.read1(n)

    def close(self) -> None:
        self._file.close()
        self._sock.close()
