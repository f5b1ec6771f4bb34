"""HealthPoller against real HTTP servers: a small scripted asyncio server (real sockets, real HTTP), a raw
socket server that answers junk, and the project's simulator; locally and through a real sshd tunnel."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from tests.helpers.deadline import deadline
from tests.helpers.processes import Sims, Spawner
from tests.helpers.sshd import free_port, ssh_host
from tui.core.events import HealthResult, ServerInfoAnswer
from tui.sources.health import HealthPoller
from tui.sources.host import Host
from tui.sources.local import LocalHost


class ScriptedServer:
    """A real HTTP/1.1 server on 127.0.0.1 whose answer per path is set by the test."""

    def __init__(self) -> None:
        self.status = {"/health": 503, "/v1/models": 200}
        self.body = {"/v1/models": b'{"object":"list","data":[{"id":"m","object":"model"}]}'}
        self.delay = 0.0
        self.junk: bytes | None = None  # when set, answer these bytes instead of HTTP
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests: list[tuple[float, str]] = []
        self.targets: list[str] = []  # request targets as sent, query included
        self.heads: list[bytes] = []  # each request's head, as received
        self.port = 0
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> ScriptedServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                target = head.split(b" ")[1].decode()
                path = target.partition("?")[0]  # routed by path, as SGLang's server routes (the query marks the tool)
                self.requests.append((time.monotonic(), path))
                self.targets.append(target)
                self.heads.append(head)
                if self.junk is not None:
                    writer.write(self.junk)
                    await writer.drain()
                    break
                if path == "/health":
                    self.in_flight += 1
                    self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    await asyncio.sleep(self.delay)
                finally:
                    if path == "/health":
                        self.in_flight -= 1
                status = self.status.get(path, 404)
                body = self.body.get(path, b"")
                writer.write(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n" % (status, len(body)) + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture(params=["local", "ssh"])
async def host(request: pytest.FixtureRequest, spawn: Spawner) -> AsyncIterator[Host]:
    h: Host = LocalHost() if request.param == "local" else ssh_host(request.getfixturevalue("sshd"))
    await h.connect()
    yield h
    await h.close()


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    s = await ScriptedServer().start()
    yield s
    await s.stop()


async def test_nothing_listening_is_refused(host: Host) -> None:
    poller = HealthPoller(host, free_port())
    result = await poller.probe("/health")
    await poller.aclose()
    assert result.outcome == "refused", result
    assert result.latency_s is not None and result.status is None


@pytest.mark.parametrize(
    ("status", "outcome"), [(503, "starting"), (200, "ok"), (500, "http_error"), (404, "http_error")]
)
async def test_status_codes(host: Host, server: ScriptedServer, status: int, outcome: str) -> None:
    server.status["/health"] = status
    poller = HealthPoller(host, server.port)
    result = await poller.probe("/health")
    await poller.aclose()
    assert (result.outcome, result.status) == (outcome, status)


async def test_models_must_look_like_a_model_list(host: Host, server: ScriptedServer) -> None:
    poller = HealthPoller(host, server.port)
    good = await poller.probe("/v1/models")
    server.body["/v1/models"] = b"<html>not json</html>"
    bad = await poller.probe("/v1/models")
    await poller.aclose()
    assert (good.outcome, good.detail) == ("ok", "m")
    assert bad.outcome == "garbage" and bad.status == 200


async def test_slow_health_times_out(host: Host, server: ScriptedServer) -> None:
    server.status["/health"] = 200
    server.delay = 1.5
    poller = HealthPoller(host, server.port, health_timeout=0.4)
    result = await poller.probe("/health")
    await poller.aclose()
    assert result.outcome == "timeout"
    assert result.latency_s is not None and result.latency_s >= 0.4


async def test_slow_but_within_the_long_timeout_is_ok(server: ScriptedServer) -> None:
    server.status["/health"] = 200
    server.delay = 1.2  # SGLang's /health runs a generation: seconds are normal, not a failure
    poller = HealthPoller(LocalHost(), server.port)
    result = await poller.probe("/health")
    await poller.aclose()
    assert result.outcome == "ok" and result.latency_s is not None and result.latency_s >= 1.2


async def test_junk_instead_of_http_is_garbage(host: Host, server: ScriptedServer) -> None:
    server.junk = b"\x00\x01SSH-2.0-not-http\r\n\r\n"
    poller = HealthPoller(host, server.port)
    result = await poller.probe("/health")
    await poller.aclose()
    assert result.outcome == "garbage", result


async def test_health_polls_never_overlap(server: ScriptedServer) -> None:
    server.status["/health"] = 503
    server.delay = 0.25
    poller = HealthPoller(LocalHost(), server.port, fast_interval=0.0, models_interval=0.05)
    poller.set_phase("warmup")
    results: list[HealthResult | ServerInfoAnswer] = []

    async def collect() -> None:
        async for result in poller.results():
            results.append(result)

    task = asyncio.create_task(collect())
    await _until(lambda: sum(p == "/health" for _, p in server.requests) >= 3
                 and any(r.endpoint == "/v1/models" for r in results))  # fmt: skip
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    health_requests = [p for _, p in server.requests if p == "/health"]
    assert len(health_requests) >= 3  # it kept polling back to back …
    assert server.max_in_flight == 1  # … but never two at once (seen by the server)
    assert poller.max_in_flight == 1
    assert any(r.endpoint == "/v1/models" for r in results)


async def test_polls_rarely_while_loading_and_fast_once_http_is_up(server: ScriptedServer) -> None:
    server.status["/health"] = 503
    # Slow mode polls once an hour: within this test's timeouts, only the fast mode can make a second poll.
    poller = HealthPoller(LocalHost(), 1, slow_interval=3600.0, fast_interval=0.05, models_interval=3600.0)
    poller.port = free_port()  # loading: nothing listens yet
    results: list[HealthResult | ServerInfoAnswer] = []
    task = asyncio.create_task(_drain(poller, results))
    await _until(lambda: any(r.endpoint == "/health" and r.outcome == "refused" for r in results))
    refused_polls = len(server.requests)
    assert refused_polls == 0
    poller.port = server.port  # uvicorn came up …
    poller.set_phase("warmup")  # … and the monitor says so: the sleeping poller wakes at once
    await _until(lambda: sum(p == "/health" for _, p in server.requests) >= 4)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    health_requests = [p for _, p in server.requests if p == "/health"]
    assert len(health_requests) >= 4, health_requests  # slow mode would have made none in this time


async def _drain(poller: HealthPoller, into: list[HealthResult | ServerInfoAnswer]) -> None:
    async for result in poller.results():
        into.append(result)


async def _until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait for a condition (never for a fixed time); fail after a generous timeout."""
    async with deadline(timeout):
        while not condition():
            await asyncio.sleep(0.02)


async def test_simulated_startup_refused_then_ok(host: Host, tmp_path: Path, sim: Sims) -> None:
    server = sim(tmp_path, speed=400.0, tp=2, shards=8)
    poller = HealthPoller(host, server.port, slow_interval=0.5, fast_interval=0.1)
    outcomes: list[str] = []
    try:
        async with deadline(60):
            async for result in poller.results():
                if result.endpoint == "/health":
                    if not outcomes or outcomes[-1] != result.outcome:
                        outcomes.append(result.outcome)
                    if result.outcome == "ok":
                        break
    finally:
        server.stop()
    assert outcomes[0] == "refused"
    assert outcomes[-1] == "ok"
    assert "garbage" not in outcomes and "error" not in outcomes


async def test_every_probe_says_it_is_the_tools_and_polls_rarely_once_ready(server: ScriptedServer) -> None:
    """The query marks the tool's requests in the server's access log; at ready /health waits 30 s between polls."""
    from tui.core.probes import PROBE_QUERY, is_probe_access
    from tui.sources.health import READY_INTERVAL_S

    poller = HealthPoller(LocalHost(), server.port)
    for endpoint in ("/health", "/v1/models"):
        await poller.probe(endpoint)
    assert server.targets == [f"/health?{PROBE_QUERY}", f"/v1/models?{PROBE_QUERY}"]
    assert is_probe_access(f'127.0.0.1:5 - "GET {server.targets[0]} HTTP/1.1" 200 OK')
    assert not is_probe_access('127.0.0.1:5 - "GET /health HTTP/1.1" 200 OK')  # someone else's probe
    poller._last_health = "ok"
    assert poller.health_interval() == READY_INTERVAL_S >= 30.0
    await poller.aclose()
