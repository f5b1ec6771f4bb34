"""HTTP answers read with a cap on their size and on their whole time (the caps: tui.core.limits).

httpx's own timeouts are per read, so an answer that drips a byte every few seconds never times out, and
`response.content` or `aiter_lines()` hold whatever the peer sends. Here a body larger than SGLang ever sends, or
one that takes longer in all than its deadline, ends the read with one line (BodyTooLarge, httpx.ReadTimeout),
so memory and time stay bounded whatever answers on the port.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx

from tui.core.limits import size_words
from tui.sources.bounded import within


class BodyTooLarge(httpx.DecodingError):
    """The answer passed its cap: str() is the one line (an httpx error, so every caller already counts it)."""


async def read_capped(response: httpx.Response, cap: int, what: str) -> bytes:
    """The whole body of a streamed response, at most `cap` bytes; BodyTooLarge past it."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > cap:
            raise BodyTooLarge(f"{what} answered more than {size_words(cap)}, more than SGLang ever sends")
        chunks.append(chunk)
    return b"".join(chunks)


async def head(response: httpx.Response, most: int) -> bytes:
    """The first `most` bytes of a streamed body (the rest is not read)."""
    found = bytearray()
    async for chunk in response.aiter_bytes():
        found += chunk[: most - len(found)]
        if len(found) >= most:
            break
    return bytes(found)


async def get_capped(client: httpx.AsyncClient, url: str, *, cap: int, total_s: float, what: str | None = None,
                     timeout: httpx.Timeout | float | None = None) -> httpx.Response:  # fmt: skip
    """GET url and read its body (at most `cap` bytes) within `total_s` seconds in all; the response, read.
    BodyTooLarge past the cap, httpx.ReadTimeout past the deadline, and httpx's own errors as they come."""
    name = what or url.split("?", 1)[0]

    async def read() -> httpx.Response:
        extra = {} if timeout is None else {"timeout": timeout}
        async with client.stream("GET", url, **extra) as response:  # type: ignore[arg-type]
            body = await read_capped(response, cap, name)
            kind = response.headers.get("content-type")
            # the body is decoded already: a fresh response without the encoding headers, so it is not decoded twice
            return httpx.Response(response.status_code, headers={"content-type": kind} if kind else None,
                                  content=body, request=response.request)  # fmt: skip

    try:
        return await within(read(), total_s)
    except asyncio.TimeoutError:
        raise httpx.ReadTimeout(f"{name} gave no whole answer in {total_s:g} s") from None


async def lines_capped(response: httpx.Response, cap: int, what: str) -> AsyncIterator[str]:
    """The body's lines (split at \\n, a trailing \\r dropped), none longer than `cap` bytes: BodyTooLarge for a
    line that passes it without its newline (httpx's aiter_lines would hold all of it)."""
    pending = bytearray()
    async for chunk in response.aiter_bytes():
        searched = len(pending)
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", max(start, searched))) >= 0:
            yield pending[start:end].rstrip(b"\r").decode("utf-8", "replace")
            start = searched = end + 1
        del pending[:start]
        if len(pending) > cap:
            raise BodyTooLarge(f"{what} sent a line of more than {size_words(cap)}, more than SGLang ever sends")
    if pending:
        yield pending.decode("utf-8", "replace")
