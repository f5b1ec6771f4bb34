"""HTTP probes of the server through the host: `/health` (readiness) and `/v1/models` (uvicorn up, never readiness).

`/health` runs a real 1-token generation once the server is up (≥1 s, up to 20 s), so it gets a long read
timeout and is never polled concurrently with itself. It is polled rarely while the server loads and
fast once uvicorn is up (warmup), which is when `wait` needs to see the 200 quickly, and at most every 30 s once
it answers 200: each /health costs the server an access line and a prefill (tui.core.probes marks them).

When `/health` turns 200, one identity probe (`/model_info`, or `/get_model_info` where that is 404, as in
0.4.x) asks what answers, before that 200 is handed on: the reducer decides from its `model_path` whether the
200 is this server's (tui.core.answerer). At most IDENTITY_TRIES such probes per run of 200s.
Once the identity answer is SGLang's, one `/server_info` (`/get_server_info` where that is 404) per run of 200s
reads the version and 0.5.23's startup_time (tui.core.serverinfo), handed on right after that 200; never polled.
Every request carries `?from=sglang-tui` (in the access line) and `User-Agent: sglang-tui-probe`, so the
server's access log tells the tool's requests from others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import httpx

from tui.core.events import HealthResult, ServerInfoAnswer
from tui.core.httpanswer import IDENTITY_ENDPOINTS, classify_answer
from tui.core.limits import PROBE_BODY_MAX
from tui.core.probes import probe_path
from tui.core.serverinfo import parse_server_info
from tui.core.vocab import HealthOutcome
from tui.sources.bounded import within
from tui.sources.host import Host, HostAuthError, HostError
from tui.sources.httpread import BodyTooLarge, get_capped

HEALTH_READ_TIMEOUT_S = 30.0  # SGLang's own health check gives up after 20 s
MODELS_TIMEOUT_S = 5.0
READY_INTERVAL_S = 30.0  # once /health says ok, liveness comes from the log, the port and the process watch
SERVER_INFO_ENDPOINTS = ("/server_info", "/get_server_info")  # the second: 0.4.x, a deprecated alias in 0.5.x
IDENTITY_TRIES = 3  # identity probes per run of /health 200s, until one gets an answer
PROBE_HEADERS = {"User-Agent": "sglang-tui-probe"}
FAST_PHASES = frozenset({"warmup", "ready", "serving"})


def classify(endpoint: str, response: httpx.Response) -> tuple[HealthOutcome, str]:
    """HTTP answer → (outcome, detail): tui.core.httpanswer's rule, the same for the one-shot probe."""
    return classify_answer(endpoint, response.status_code, response.content)


def classify_error(exc: Exception) -> tuple[HealthOutcome, str]:
    """A failed request → (outcome, detail). Through an SSH tunnel, a closed port looks like a disconnect."""
    if isinstance(exc, BodyTooLarge):
        return "garbage", str(exc)
    if isinstance(exc, httpx.TimeoutException):
        return "timeout", type(exc).__name__
    if isinstance(exc, httpx.ConnectError):
        return "refused", "connection refused"
    if isinstance(exc, httpx.RemoteProtocolError):
        text = str(exc)
        if "without sending" in text or "disconnected" in text.lower() or "closed" in text.lower():
            return "refused", "nothing answered on the port"
        return "garbage", f"not HTTP: {text}"
    if isinstance(exc, (httpx.ReadError, httpx.WriteError)):
        return "refused", f"connection closed: {type(exc).__name__}"
    if isinstance(exc, httpx.DecodingError):
        return "garbage", f"undecodable answer: {exc}"
    return "error", f"{type(exc).__name__}: {exc}"


class HealthPoller:
    """Polls /health in one loop (never overlapping) and /v1/models now and then; yields HealthResult."""

    def __init__(
        self,
        host: Host,
        port: int,
        *,
        slow_interval: float = 5.0,
        fast_interval: float = 0.25,
        ready_interval: float = READY_INTERVAL_S,
        models_interval: float = 5.0,
        health_timeout: float = HEALTH_READ_TIMEOUT_S,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        enabled: bool = True,
    ) -> None:
        self.host = host
        self.port = port
        self.slow_interval = slow_interval
        self.fast_interval = fast_interval
        self.ready_interval = ready_interval
        self.models_interval = models_interval
        self.health_timeout = health_timeout
        self._transport = transport  # tests only: httpx.MockTransport for answers no real server gives
        self._clock = clock
        self.enabled = enabled  # False (--no-health): no probe at all; results() yields nothing
        self._identity_tries = 0  # identity probes in this run of /health 200s
        self._identity_known = False  # one got an answer (ok, garbage, HTTP error) in this run
        self._identity_ok = False  # that answer was SGLang's (a model_path)
        self._server_info_read = False  # /server_info was asked in this run of /health 200s
        self._phase = "starting"
        self._uvicorn_up = False
        self._last_health: str | None = None
        self._wake = asyncio.Event()
        self._client: httpx.AsyncClient | None = None
        self._base: str | None = None
        self.in_flight = 0  # /health requests in flight (never above 1)
        self.max_in_flight = 0
        self._health_lock = asyncio.Lock()  # the loop's /health and a caller's check_health never overlap

    # --------------------------------------------------------------------------------------- cadence

    def set_phase(self, phase: str) -> None:
        """The monitor's view of the startup phase (a Phase value); warmup and later poll fast."""
        phase = getattr(phase, "value", phase)
        if phase != self._phase:
            self._phase = phase
            if phase in FAST_PHASES:
                self._wake.set()

    def uvicorn_up(self, up: bool = True) -> None:
        """Evidence from the log (uvicorn lines, fired up) or /v1/models that HTTP is served."""
        if up != self._uvicorn_up:
            self._uvicorn_up = up
            if up:
                self._wake.set()

    def health_interval(self) -> float:
        if self._last_health == "ok":
            return self.ready_interval
        if self._uvicorn_up or self._phase in FAST_PHASES or self._last_health in ("starting", "timeout"):
            return self.fast_interval
        return self.slow_interval

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake early when the phase says HTTP just came up."""
        self._wake.clear()
        try:
            await within(self._wake.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    # ------------------------------------------------------------------------------------------ probes

    async def _http(self) -> httpx.AsyncClient:
        base = await self.host.http_base_url(self.port)
        if self._client is None or base != self._base:
            # After a reconnect the tunnel's local port changes and pooled sockets are dead: new client.
            if self._client is not None:
                await self._client.aclose()
            self._client = httpx.AsyncClient(
                base_url=base,
                trust_env=False,
                timeout=httpx.Timeout(MODELS_TIMEOUT_S, connect=5.0),
                limits=httpx.Limits(max_connections=4, max_keepalive_connections=2),
                headers=PROBE_HEADERS,
                transport=self._transport,
            )
            self._base = base
        return self._client

    async def probe(self, endpoint: str) -> HealthResult:
        """One GET, classified; never raises (except for a final host failure)."""
        started = self._clock()
        timeout = self.health_timeout if endpoint == "/health" else MODELS_TIMEOUT_S
        try:
            client = await self._http()
            # the query marks the tool's own requests in the server's access log (tui.core.probes); the body is
            # capped, and so is the whole answer's time (a dripping body never ends httpx's per-read timeout)
            response = await get_capped(client, probe_path(endpoint), cap=PROBE_BODY_MAX, total_s=timeout,
                                        timeout=httpx.Timeout(timeout, connect=5.0))  # fmt: skip
            outcome, detail = classify(endpoint, response)
            status: int | None = response.status_code
        except HostAuthError:
            raise
        except HostError as exc:
            outcome, detail, status = "error", str(exc), None
        except httpx.HTTPError as exc:
            outcome, detail = classify_error(exc)
            status = None
        except (OSError, ValueError) as exc:
            outcome, detail, status = "error", f"{type(exc).__name__}: {exc}", None
        model_path = detail if endpoint in IDENTITY_ENDPOINTS and outcome == "ok" else None
        return HealthResult(endpoint, outcome, status, round(self._clock() - started, 4), detail, model_path)

    async def identify(self) -> HealthResult:
        """What answers on the port: /model_info, or /get_model_info where that is 404 (SGLang 0.4.x)."""
        result = await self.probe(IDENTITY_ENDPOINTS[0])
        if result.outcome == "http_error" and result.status == 404:
            result = await self.probe(IDENTITY_ENDPOINTS[1])
        return result

    async def server_info(self) -> ServerInfoAnswer:
        """One read of /server_info (or /get_server_info where that is 404): version and startup_time."""
        answer = await self._server_info(SERVER_INFO_ENDPOINTS[0])
        if answer.outcome == "http_error" and answer.detail == "HTTP 404":
            answer = await self._server_info(SERVER_INFO_ENDPOINTS[1])
        return answer

    async def _server_info(self, endpoint: str) -> ServerInfoAnswer:
        try:
            client = await self._http()
            response = await get_capped(client, probe_path(endpoint), cap=PROBE_BODY_MAX, total_s=MODELS_TIMEOUT_S,
                                        timeout=httpx.Timeout(MODELS_TIMEOUT_S, connect=5.0))  # fmt: skip
        except HostAuthError:
            raise
        except HostError as exc:
            return ServerInfoAnswer(endpoint, "error", detail=str(exc))
        except httpx.HTTPError as exc:
            return ServerInfoAnswer(endpoint, classify_error(exc)[0], detail=classify_error(exc)[1])
        except (OSError, ValueError) as exc:
            return ServerInfoAnswer(endpoint, "error", detail=f"{type(exc).__name__}: {exc}")
        if not 200 <= response.status_code < 300:
            return ServerInfoAnswer(endpoint, "http_error", detail=f"HTTP {response.status_code}")
        parsed = parse_server_info(response.content)
        if parsed is None:
            return ServerInfoAnswer(endpoint, "garbage", detail=f"not a JSON object: {response.content[:80]!r}")
        version, startup_time, model_path = parsed
        return ServerInfoAnswer(endpoint, "ok", version, startup_time, model_path)

    def _wants_identity(self, health: HealthResult) -> bool:
        """A /health 200 with no identity answer yet in this run of 200s (a non-200 starts a new run)."""
        if health.outcome != "ok":
            self._identity_tries, self._identity_known = 0, False
            self._identity_ok = self._server_info_read = False
            return False
        return not self._identity_known and self._identity_tries < IDENTITY_TRIES

    async def _probe_health(self) -> HealthResult:
        async with self._health_lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                return await self.probe("/health")
            finally:
                self.in_flight -= 1

    async def check_health(self) -> HealthResult:
        """One /health now, for a caller that must know the server still answers (`wait`'s last look before
        it says ready); it waits for the loop's own /health when one is in flight, never overlapping it."""
        return await self._probe_health()

    async def results(self) -> AsyncIterator[HealthResult | ServerInfoAnswer]:
        """Forever: /health results, and /v1/models results until /health says ok (plus one refresh then).

        A /health 200 comes after the identity result it prompted. Disabled: nothing, ever."""
        if not self.enabled:
            await asyncio.Event().wait()
        queue: asyncio.Queue[HealthResult | ServerInfoAnswer] = asyncio.Queue()
        models = asyncio.ensure_future(self._models_loop(queue))
        health = asyncio.ensure_future(self._health_loop(queue))
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, health, models}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield getter.result()
                    continue
                getter.cancel()
                for task in (health, models):
                    if task.done():
                        task.result()  # a final host failure: let it out
        finally:
            health.cancel()
            models.cancel()
            await asyncio.gather(health, models, return_exceptions=True)
            await self.aclose()

    async def _health_loop(self, queue: asyncio.Queue[HealthResult | ServerInfoAnswer]) -> None:
        while True:
            result = await self._probe_health()  # awaited: the next one starts only after this one ends
            self._last_health = result.outcome
            if result.outcome in ("starting", "ok"):
                self._uvicorn_up = True
            elif result.outcome == "refused":
                self._uvicorn_up = False
            if self._wants_identity(result):
                self._identity_tries += 1
                ident = await self.identify()
                self._identity_known = ident.outcome in ("ok", "garbage", "http_error")
                self._identity_ok = ident.outcome == "ok"
                await queue.put(ident)  # before the 200: the reducer needs it to judge that 200
            await queue.put(result)
            if result.outcome == "ok" and self._identity_ok and not self._server_info_read:
                self._server_info_read = True  # once per run of 200s, whatever it answers: never a poll
                await queue.put(await self.server_info())
            await self._sleep(self.health_interval())

    async def _models_loop(self, queue: asyncio.Queue[HealthResult | ServerInfoAnswer]) -> None:
        refreshed_at_ready = False  # once /health is ok, one more probe so the pane shows no stale "refused"
        while True:
            ready = self._last_health == "ok"
            if not ready or not refreshed_at_ready:
                result = await self.probe("/v1/models")
                if result.outcome == "ok":
                    self.uvicorn_up(True)
                await queue.put(result)
            refreshed_at_ready = ready
            await asyncio.sleep(self.models_interval)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
