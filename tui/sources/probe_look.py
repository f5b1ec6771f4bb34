"""One look at the host for a one-shot command (`probe`): the log file and its new bytes, one /health (and, at
the first 200 of a run, the identity probe), and the server's processes. Everything through the Host, each
a short command or one HTTP request, so a call costs the host a few forks and the server one /health.

The long-lived Monitor (tail -F, the health poller, the watch loop) is for watchers that stay; a probe is a
fresh process each period and leaves nothing running. HTTP here is one GET over a plain connection: an asyncio
one (the SSH port forward runs on the same loop), or on this machine (tui.sources.now.NowHost, no event loop)
a blocking socket; the request and the answer's parsing are the same code for both. httpx's import alone (it
loads rich too) is a large part of a probe's budget. The answers are judged by the same rule as the poller's
(tui.core.httpanswer). On NowHost the log is read with file IO, the same Look as look_command's.
"""

from __future__ import annotations

import shlex
import time
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from tui.core.clocks import newest_log_time
from tui.core.events import HealthResult, PortOwner, ServerProcess
from tui.core.httpanswer import IDENTITY_ENDPOINTS, classify_answer
from tui.core.probe_fold import FileLook
from tui.core.probe_memo import FoundServer
from tui.core.probes import probe_path
from tui.core.vocab import HealthOutcome
from tui.sources.host import Host, HostAuthError, HostError
from tui.sources.logtail import NO_LAUNCH_TAIL_BYTES, Look, last_launch_command, look_command, parse_look
from tui.sources.now import NowHost
from tui.sources.procwatch_once import OneShotWatch

if TYPE_CHECKING:
    import asyncio

USER_AGENT = "sglang-tui-probe"  # as the health poller's
BODY_LIMIT = 1 << 16  # an identity answer is a few hundred bytes; /health's is empty


async def connect(host: Host, seconds: float) -> None:
    """The host's connection, within `seconds` seconds (TimeoutError past them); NowHost has none to make."""
    if isinstance(host, NowHost):
        return await host.connect()
    import asyncio  # here, not at the top: a probe of a local server runs with no event loop (tui/sources/now.py)

    from tui.sources.bounded import within

    try:
        await within(host.connect(), seconds)
    except asyncio.TimeoutError:  # its own class before Python 3.11
        raise TimeoutError() from None


async def look_at_log(host: Host, path: str, *, at: int = 0, tail_bytes: int = 0) -> FileLook:
    """The log's look (tui.sources.logtail's: its mtime, the host's clock, the newest log time in its last bytes),
    and with tail_bytes the bytes just before offset `at` (hex, before the look: the look ends with raw bytes)."""
    if isinstance(host, NowHost):  # this machine, read here: no shell and no children
        look, tail = host.look_at(path, at=at, tail_bytes=tail_bytes)
        received = time.time()
    else:
        look, tail = await _look_by_command(host, path, at=at, tail_bytes=tail_bytes)
        received = time.time()
    file = look.file
    return FileLook(
        look.kind, file.dev if file else "", file.inode if file else "", file.size if file else 0,
        file.mtime if file else None, received - look.host_now if look.host_now is not None else 0.0,
        look.symlink, look.readable, tail, newest_log_time(look.end),
    )  # fmt: skip


async def _look_by_command(host: Host, path: str, *, at: int, tail_bytes: int) -> tuple[Look, bytes | None]:
    q = shlex.quote(path)
    command = ""
    if tail_bytes and at >= tail_bytes:
        command = f"tail -c +{at - tail_bytes + 1} -- {q} 2>/dev/null | head -c {tail_bytes} | od -An -v -tx1; echo X; "
    result = await host.run(command + look_command(path), timeout=30.0)
    hexed, marked, out = result.stdout.partition(b"X\n") if command else (b"", b"", result.stdout)
    tail = bytes.fromhex("".join(hexed.decode("ascii", "replace").split())) if marked else None
    return parse_look(out), tail


async def last_launch_offset(host: Host, path: str, size: int) -> tuple[int, str]:
    """Where a large log's last launch starts (its last `server_args=` line), else its last few MiB."""
    result = await host.run(last_launch_command(path), timeout=30.0)
    text = result.stdout.decode("ascii", "replace").strip()
    if text.isdigit():
        return int(text), f"skipped {int(text)} bytes before the last `server_args=` line"
    start = max(0, size - NO_LAUNCH_TAIL_BYTES)
    return start, f"no `server_args=` line in {size} bytes; read the last {size - start} bytes"


async def read_log(host: Host, path: str, start: int, limit: int) -> bytes:
    """At most `limit` bytes of the log from byte `start` (0-based)."""
    if isinstance(host, NowHost):
        return host.read_bytes(path, int(start), int(limit))
    q = shlex.quote(path)
    result = await host.run(f"tail -c +{int(start) + 1} -- {q} | head -c {int(limit)}", timeout=30.0)
    return result.stdout


async def processes(
    host: Host, port: int, log: str | None, found: FoundServer | None, *, settled: bool = False
) -> tuple[ServerProcess, PortOwner | None, FoundServer | None]:
    """The server's processes (the last call's scanned again, else searched for), who listens on the port, one
    activity sample while it starts (not once `settled`, ready at the last call), and what to hand the next call."""
    return await OneShotWatch(host, port=port, log_path=log).look(found, settled=settled)


async def health(host: Host, port: int, *, timeout: float, identify: bool) -> list[HealthResult]:
    """One /health; with `identify` and a 200, the identity probe first (the reducer judges the 200 by it)."""
    try:
        base = await host.http_base_url(port)
    except HostAuthError:
        raise
    except HostError as exc:
        return [HealthResult("/health", "error", None, None, str(exc))]
    opener = _blocking_opener(host) if isinstance(host, NowHost) else _open_async
    deadline = time.monotonic() + timeout
    result = await get(base, "/health", timeout, opener)
    if not (identify and result.outcome == "ok"):
        return [result]
    left = max(0.05, deadline - time.monotonic())
    ident = await get(base, IDENTITY_ENDPOINTS[0], left, opener)
    if ident.outcome == "http_error" and ident.status == 404:
        ident = await get(base, IDENTITY_ENDPOINTS[1], max(0.05, deadline - time.monotonic()), opener)
    return [ident, result]


class Stream(Protocol):
    """What one GET needs of a connection: asyncio's StreamReader and StreamWriter calls (tui.sources.now's
    BlockingStream has the same)."""

    def write(self, data: bytes) -> None: ...
    async def drain(self) -> None: ...
    async def readline(self) -> bytes: ...
    async def readexactly(self, n: int) -> bytes: ...
    async def read(self, n: int) -> bytes: ...
    def close(self) -> None: ...


class Opener(Protocol):
    """Connect to HOST:PORT and run the exchange on it within `timeout` (TimeoutError past it)."""

    async def __call__(self, host: str, port: int, timeout: float, endpoint: str) -> tuple[int, bytes]: ...


class _Pair:
    """asyncio's reader and writer of one connection, as one Stream."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer

    def write(self, data: bytes) -> None:
        self._writer.write(data)

    async def drain(self) -> None:
        await self._writer.drain()

    async def readline(self) -> bytes:
        return await self._reader.readline()

    async def readexactly(self, n: int) -> bytes:
        return await self._reader.readexactly(n)

    async def read(self, n: int) -> bytes:
        return await self._reader.read(n)

    def close(self) -> None:
        self._writer.close()


async def _open_async(host: str, port: int, timeout: float, endpoint: str) -> tuple[int, bytes]:
    import asyncio  # an SSH host's look runs on a loop (its port forward too); NowHost's never loads it

    from tui.sources.bounded import within

    async def exchange() -> tuple[int, bytes]:
        reader, writer = await asyncio.open_connection(host, port)
        return await _exchange(_Pair(reader, writer), host, port, endpoint)

    try:
        return await within(exchange(), timeout)
    except asyncio.TimeoutError:  # its own class before Python 3.11
        raise TimeoutError("no answer in time") from None


def _blocking_opener(now: NowHost) -> Opener:
    async def opened(host: str, port: int, timeout: float, endpoint: str) -> tuple[int, bytes]:
        return await _exchange(now.open_stream(host, port, time.monotonic() + timeout), host, port, endpoint)

    return opened


async def get(base: str, endpoint: str, timeout: float, opener: Opener = _open_async) -> HealthResult:
    """One GET of the endpoint (marked as ours), classified; never raises."""
    started = time.monotonic()
    outcome: HealthOutcome
    status: int | None
    where = urlsplit(base)
    try:
        status, body = await opener(where.hostname or "127.0.0.1", where.port or 80, max(0.05, timeout), endpoint)
    except TimeoutError:
        outcome, status, detail = "timeout", None, "no answer in time"
    except ConnectionRefusedError:
        outcome, status, detail = "refused", None, "connection refused"
    except (ConnectionResetError, BrokenPipeError, EOFError):  # EOFError: asyncio.IncompleteReadError is one
        outcome, status, detail = "refused", None, "nothing answered on the port"
    except ValueError as exc:
        outcome, status, detail = "garbage", None, f"not HTTP: {exc}"
    except OSError as exc:
        outcome, status, detail = "error", None, f"{type(exc).__name__}: {exc}"
    else:
        outcome, detail = classify_answer(endpoint, status or 0, body)
    model_path = detail if endpoint in IDENTITY_ENDPOINTS and outcome == "ok" else None
    return HealthResult(endpoint, outcome, status, round(time.monotonic() - started, 4), detail, model_path)


async def _exchange(stream: Stream, host: str, port: int, endpoint: str) -> tuple[int, bytes]:
    """(status, body) of `GET endpoint?from=sglang-tui` over HTTP/1.1 with Connection: close. The body is read
    by its Content-Length, chunk by chunk, or to the end, up to BODY_LIMIT; ValueError when it is not HTTP."""
    try:
        head = f"[{host}]" if ":" in host else host
        stream.write(
            f"GET {probe_path(endpoint)} HTTP/1.1\r\nHost: {head}:{port}\r\nUser-Agent: {USER_AGENT}\r\n"
            "Accept: */*\r\nConnection: close\r\n\r\n".encode("ascii")
        )
        await stream.drain()
        status_line = await stream.readline()
        if not status_line:
            raise EOFError("no status line")
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            raise ValueError(f"status line {status_line[:40]!r}")
        headers: dict[bytes, bytes] = {}
        while True:
            line = await stream.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        return int(parts[1]), await _body(stream, headers)
    finally:
        stream.close()


async def _body(stream: Stream, headers: dict[bytes, bytes]) -> bytes:
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = b""
        while len(body) < BODY_LIMIT:
            size = int((await stream.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                break
            body += await stream.readexactly(size)
            await stream.readline()
        return body[:BODY_LIMIT]
    length = headers.get(b"content-length")
    if length is not None and length.isdigit():
        return await stream.readexactly(min(int(length), BODY_LIMIT))
    return await stream.read(BODY_LIMIT)
