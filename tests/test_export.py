"""`export`'s own parts, in process (no process is started): the --listen address, the /metrics HTTP answer from
asyncio's server, and the textfile written atomically for node_exporter."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest

from tests.test_metrics import replayed, samples
from tui.commands.export import TEXTFILE_NAME, Board, serve, textfile_loop
from tui.commands.targets import parse_listen
from tui.core.metrics import CONTENT_TYPE


def test_listen_addresses() -> None:
    assert parse_listen(":9464") == ("0.0.0.0", 9464)
    assert parse_listen("9464") == ("0.0.0.0", 9464)
    assert parse_listen("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_listen("[::1]:9464") == ("::1", 9464)
    for bad in ("host", "host:port", ":99999"):
        with pytest.raises(ValueError, match="give HOST:PORT, :PORT or PORT"):
            parse_listen(bad)


def board() -> Board:
    b = Board()
    b.put("gpu-a", replayed("v0.5.23-tp8-eagle3-ready.log"))
    b.put("gpu-b", replayed("fail-oom-capture-0.5.23.log"))
    return b


async def get(port: int, request: bytes) -> tuple[bytes, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


async def test_metrics_is_served_with_the_exposition_content_type() -> None:
    b = board()
    server = await asyncio.start_server(lambda r, w: serve(r, w, b), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        head, body = await get(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK") and f"Content-Type: {CONTENT_TYPE}".encode() in head
        found = samples(body.decode())
        assert found['sglang_tui_phase{server="gpu-a",phase="serving"}'] == 1
        assert found['sglang_tui_failed{server="gpu-b",kind="oom"}'] == 1
        head, body = await get(port, b"GET /nothing HTTP/1.1\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 404")
        head, body = await get(port, b"POST /metrics HTTP/1.1\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 405")
        head, body = await get(port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and body == b""
    finally:
        server.close()
        await server.wait_closed()


async def test_the_textfile_is_written_whole_and_readable_by_another_user(tmp_path: Path) -> None:
    stop = asyncio.Event()
    stop.set()  # one write, then it returns
    await textfile_loop(tmp_path, board(), stop)
    written = tmp_path / TEXTFILE_NAME
    assert samples(written.read_text())['sglang_tui_ready{server="gpu-a"}'] == 1
    assert stat.S_IMODE(written.stat().st_mode) == 0o644  # node_exporter runs as its own user
    assert [p.name for p in tmp_path.iterdir()] == [TEXTFILE_NAME]  # no temporary file left behind
