"""A small HTTP/1.1 server and client on asyncio streams (keep-alive, Content-Length and chunked bodies).

Enough HTTP for the endpoints SGLang serves during startup and for streaming generation; the stdlib only.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

PHRASES = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required",
    413: "Payload Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
MAX_HEADER = 65536
MAX_BODY = 16 * 2**20


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    client: str

    def json(self) -> object:
        return json.loads(self.body or b"{}")


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    stream: AsyncIterator[bytes] | None = None  # sent chunked when set
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, data: object, status: int = 200) -> Response:
        return cls(status, json.dumps(data).encode())


Handler = Callable[[Request], Awaitable[Response]]
AccessLog = Callable[[Request, int], None]


class BadRequest(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status


async def _read_request(reader: asyncio.StreamReader, client: str) -> Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None  # the client closed the connection between requests
    except asyncio.LimitOverrunError:
        raise BadRequest(400, "header too large") from None
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, _version = lines[0].split(" ", 2)
    except ValueError:
        raise BadRequest(400, "bad request line") from None
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            key, value = line.split(":", 1)
            headers[key.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise BadRequest(411, "chunked request bodies are not supported")
    length = int(headers.get("content-length", "0") or 0)
    if length > MAX_BODY:
        raise BadRequest(413, "body too large")
    body = await reader.readexactly(length) if length else b""
    url = urlsplit(target)
    return Request(method.upper(), url.path or "/", url.query, headers, body, client)


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {PHRASES.get(status, 'Unknown')}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _send(writer: asyncio.StreamWriter, response: Response, keep_alive: bool) -> None:
    headers = {
        "date": email.utils.formatdate(usegmt=True),
        "server": "uvicorn",
        "content-type": response.content_type,
        **response.headers,
    }
    if not keep_alive:
        headers["connection"] = "close"
    if response.stream is None:
        headers["content-length"] = str(len(response.body))
        writer.write(_head(response.status, headers) + response.body)
        await writer.drain()
        return
    headers["transfer-encoding"] = "chunked"
    writer.write(_head(response.status, headers))
    await writer.drain()
    try:
        async for chunk in response.stream:
            if chunk:
                writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                await writer.drain()
    finally:  # the client went away mid-stream: close the stream now, so its request stops at once
        close = getattr(response.stream, "aclose", None)
        if close is not None:
            await close()
    writer.write(b"0\r\n\r\n")
    await writer.drain()


async def serve(host: str, port: int, handler: Handler, access: AccessLog) -> asyncio.Server:
    """Listen on host:port (raises OSError when the address is taken) and answer with `handler`."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("?", 0)
        client = f"{peer[0]}:{peer[1]}"
        try:
            while True:
                try:
                    request = await _read_request(reader, client)
                except BadRequest as err:
                    await _send(writer, Response.json({"detail": str(err)}, err.status), False)
                    return
                if request is None:
                    return
                try:
                    response = await handler(request)
                except Exception as err:  # a handler bug answers 500 instead of killing the connection loop
                    response = Response.json({"detail": f"{type(err).__name__}: {err}"}, 500)
                access(request, response.status)
                keep_alive = request.headers.get("connection", "").lower() != "close"
                await _send(writer, response, keep_alive)
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(connection, host, port, limit=MAX_HEADER, reuse_address=True)


async def fetch(
    host: str, port: int, method: str, path: str, body: object = None, timeout: float = 30.0
) -> tuple[int, bytes]:
    """One request on a fresh connection; returns (status, body). Chunked answers are decoded."""

    async def go() -> tuple[int, bytes]:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            data = b"" if body is None else json.dumps(body).encode()
            head = f"{method} {path} HTTP/1.1\r\nhost: {host}:{port}\r\nconnection: close\r\n"
            if body is not None:
                head += f"content-type: application/json\r\ncontent-length: {len(data)}\r\n"
            writer.write(head.encode() + b"\r\n" + data)
            await writer.drain()
            raw = await reader.readuntil(b"\r\n\r\n")
            lines = raw.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ")[1])
            headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
            if "chunked" in headers.get("transfer-encoding", ""):
                out = b""
                while True:
                    size = int((await reader.readline()).strip() or b"0", 16)
                    if size == 0:
                        break
                    out += await reader.readexactly(size + 2)
                    out = out[:-2]
                return status, out
            length = int(headers.get("content-length", "0"))
            return status, await reader.readexactly(length)
        finally:
            writer.close()

    return await asyncio.wait_for(go(), timeout)
