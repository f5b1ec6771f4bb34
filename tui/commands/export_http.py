"""The head of one HTTP request to `export --listen`, read within limits: anyone who can reach the port may send
anything, so a request over them gets its status (400 for a request line that is too long or not HTTP, 431 for
headers too large or too many) and the connection closes; never a traceback, and at most one line on stderr a
minute for all of them (REFUSED_SAY_EVERY_S: a flood cannot fill the journal). The whole head has one deadline
(HEAD_TIMEOUT_S), not one per line, so a client that sends a byte at a time cannot hold its connection, and each
connection is its own task: a slow client holds only itself, never a scrape.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time

from tui.sources.bounded import within

MAX_LINE = 8 << 10  # the request line, and each header line (nginx's large_client_header_buffers: 8 KiB)
MAX_HEAD = 32 << 10  # the request line and every header together
MAX_HEADERS = 100
HEAD_TIMEOUT_S = 10.0  # the whole head
WRITE_TIMEOUT_S = 10.0  # an answer a client does not read is dropped after this
LINGER_BYTES = 1 << 20  # after a refusal, what is still read (and dropped) so the client sees the answer, not a reset
LINGER_S = 1.0
REFUSED_SAY_EVERY_S = 60.0


class HeadRefused(Exception):
    """A request refused before it is routed: its status line ("431 Request Header Fields Too Large") and why."""

    def __init__(self, status: str, why: str) -> None:
        super().__init__(why)
        self.status = status


async def read_head(reader: asyncio.StreamReader) -> bytes:
    """The request line, once the whole head is read (its headers dropped); HeadRefused over a limit,
    asyncio.TimeoutError past HEAD_TIMEOUT_S, b"" when the client closed first."""
    return await within(_head(reader), HEAD_TIMEOUT_S)


async def _head(reader: asyncio.StreamReader) -> bytes:
    request = await _line(reader, "400 Bad Request", "request line")
    if request and len(request.split()) < 2:
        raise HeadRefused("400 Bad Request", "not an HTTP request line")
    total, count = len(request), 0
    while request:
        line = await _line(reader, "431 Request Header Fields Too Large", "header line")
        if line in (b"\r\n", b"\n", b""):
            break
        total += len(line)
        count += 1
        if total > MAX_HEAD or count > MAX_HEADERS:
            raise HeadRefused(
                "431 Request Header Fields Too Large", f"headers over {MAX_HEAD >> 10} KiB or {MAX_HEADERS}"
            )
    return request


async def _line(reader: asyncio.StreamReader, status: str, what: str) -> bytes:
    """One line of at most MAX_LINE bytes (its end included)."""
    line = bytearray()
    while not line.endswith(b"\n"):
        try:
            chunk = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as err:  # closed mid-line: what came is all there is
            chunk = err.partial
            line += chunk
            break
        except asyncio.LimitOverrunError as err:  # no newline within the reader's buffer: take what it holds
            chunk = await reader.readexactly(err.consumed) if err.consumed else await reader.read(MAX_LINE)
        line += chunk
        if len(line) > MAX_LINE:
            raise HeadRefused(status, f"{what} over {MAX_LINE >> 10} KiB")
    return bytes(line)


async def refuse(writer: asyncio.StreamWriter, reader: asyncio.StreamReader, refused: HeadRefused) -> None:
    """Answer the refusal, then read on a moment (dropping it) so the client reads the answer before the close."""
    body = f"{refused}\n".encode()
    head = f"HTTP/1.1 {refused.status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
    writer.write((head + "Connection: close\r\n\r\n").encode("latin-1") + body)
    with contextlib.suppress(Exception):
        await within(writer.drain(), WRITE_TIMEOUT_S)
        with contextlib.suppress(Exception):
            writer.write_eof()
        await within(_drop(reader), LINGER_S)
    say_refused(writer, refused)


async def _drop(reader: asyncio.StreamReader) -> None:
    left = LINGER_BYTES
    while left > 0:
        chunk = await reader.read(min(left, 64 << 10))
        if not chunk:
            return
        left -= len(chunk)


_said_at: float | None = None
_unsaid = 0


def say_refused(writer: asyncio.StreamWriter, refused: HeadRefused) -> None:
    """One line on stderr for the first refusal, then at most one a minute, with the count in between."""
    global _said_at, _unsaid
    now = time.monotonic()
    if _said_at is not None and now - _said_at < REFUSED_SAY_EVERY_S:
        _unsaid += 1
        return
    peer = writer.get_extra_info("peername")
    who = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "a client"
    more = f" ({_unsaid} more refused since the last line)" if _unsaid else ""
    print(f"sglang-tui export: refused a request from {who}: {refused.status[:3]}, {refused}{more}", file=sys.stderr)
    _said_at, _unsaid = now, 0
