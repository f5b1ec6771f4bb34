"""The bench client: bounded streaming requests to SGLang's native `/generate`, through the Host's port forward.

Only what it is asked: `requests` requests in all, `concurrency` at a time, each capped at `max_new_tokens`,
the whole run capped at `timeout_s`. Cancelling `run()` (Ctrl-C, Esc in the TUI) closes every open stream,
and SGLang aborts a request whose client went away, so nothing is left generating. A failed request is a
Sample with its reason, never an exception. After the requests: `/metrics` once, and the log's stretch
written during the bench (one `tail -c` when a log path is known), for the acceptance cross-checks.

`timeout_s` bounds the whole bench, cross-checks included: what the requests leave of it is what `/metrics` and
the log read get. Every body and stream line is capped (tui.core.limits); a cap or the clock reached is one note
in the result, never a hang, a crash or a bench's worth of memory.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from tui.core.benchprompts import BUILTIN, Prompt, kinds
from tui.core.benchstats import BenchResult, Sample, Sampling, log_accept_len, metrics_accept_len, summarize
from tui.core.limits import ERROR_BODY_MAX, LOG_READ_MAX, METRICS_BODY_MAX, STREAM_LINE_MAX
from tui.sources.health import HealthPoller, classify_error
from tui.sources.host import Host, HostError
from tui.sources.httpread import BodyTooLarge, get_capped, head, lines_capped

MAX_REQUESTS = 10_000
MAX_CONCURRENCY = 256
MAX_NEW_TOKENS = 32_768
DEFAULT_TIMEOUT_S = 300.0
CONNECT_TIMEOUT_S = 10.0
METRICS_TIMEOUT_S = 5.0  # the whole /metrics answer, at most (less when the time cap is nearer)
LOG_SIZE_TIMEOUT_S = 10.0
LOG_READ_TIMEOUT_S = 20.0
MAX_COUNT = 10**9  # completion_tokens and spec_verify_ct: a count past this is no request's


@dataclass(frozen=True)
class BenchPlan:
    """What the bench will send: printed (or shown in the confirm dialog) before anything is sent."""

    requests: int = 16
    concurrency: int = 4
    max_new_tokens: int = 256
    timeout_s: float = DEFAULT_TIMEOUT_S
    prompts: tuple[Prompt, ...] = BUILTIN
    prompts_from: str = "built-in"
    temperature: float = 0.0

    @property
    def sampling(self) -> Sampling:
        return Sampling(self.temperature, self.max_new_tokens, True)

    def check(self) -> str | None:
        """One line saying which number is out of range, or None."""
        if not 1 <= self.requests <= MAX_REQUESTS:
            return f"--requests {self.requests}: use 1 to {MAX_REQUESTS}"
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            return f"--concurrency {self.concurrency}: use 1 to {MAX_CONCURRENCY}"
        if not 1 <= self.max_new_tokens <= MAX_NEW_TOKENS:
            return f"--max-tokens {self.max_new_tokens}: use 1 to {MAX_NEW_TOKENS}"
        if not self.timeout_s > 0:
            return f"--timeout {self.timeout_s:g}: use a positive number of seconds"
        return None

    def prompt(self, i: int) -> Prompt:
        return self.prompts[i % len(self.prompts)]

    def describe(self, where: str) -> str:
        """The numbers, in one line: what will be sent, where, and the caps."""
        n = len(self.prompts)
        what = (
            f"{n} built-in prompts ({kinds(self.prompts)})"
            if self.prompts_from == "built-in"
            else f"{n} prompts from {self.prompts_from}"
        )
        return (f"{self.requests} streaming POST /generate requests to {where}, {min(self.concurrency, self.requests)} at a time: "
                f"{what}; {self.sampling.words()} (at most {self.requests * self.max_new_tokens} new tokens); "
                f"stops after {self.timeout_s:g} s")  # fmt: skip


@dataclass
class Progress:
    """Counts as the bench goes (the TUI and the CLI's Ctrl-C line read them)."""

    sent: int = 0
    done: int = 0
    failed: int = 0
    in_flight: int = 0
    samples: list[Sample] = field(default_factory=list)


class NotReady(Exception):
    """str(err) is one line: why the server cannot be benched now."""


class BenchRunner:
    def __init__(self, host: Host, port: int, plan: BenchPlan, *, log_path: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.host = host
        self.port = port
        self.plan = plan
        self.log_path = log_path
        self._transport = transport  # tests only (httpx.MockTransport for answers no real server gives)
        self._clock = clock
        self.progress = Progress()
        self._capped = False

    def describe(self, where: str) -> str:
        return self.plan.describe(where)

    # ---------------------------------------------------------------------------------------- before

    async def check_ready(self) -> None:
        """One /health probe (the health poller's, through the same forward); NotReady unless it says 200."""
        poller = HealthPoller(self.host, self.port, transport=self._transport)
        try:
            result = await poller.probe("/health")
        finally:
            await poller.aclose()
        if result.outcome == "ok":
            return
        why = {
            "starting": "/health answered 503 (still starting)",
            "refused": "nothing answers on the port",
            "timeout": "/health did not answer in time",
        }.get(result.outcome, f"/health: {result.detail or result.outcome}")
        raise NotReady(f"the server on port {self.port} is not ready: {why}")

    # ------------------------------------------------------------------------------------------- run

    async def run(self) -> BenchResult:
        """Send the plan; return the result. Cancelled: closes every stream, then re-raises."""
        plan = self.plan
        deadline = self._clock() + plan.timeout_s  # the whole bench: the cross-checks get what the requests leave
        notes: list[str] = []
        base = await self.host.http_base_url(self.port)
        log_offset = await self._log_size(deadline)
        limits = httpx.Limits(max_connections=plan.concurrency + 1, max_keepalive_connections=plan.concurrency)
        timeout = httpx.Timeout(plan.timeout_s, connect=CONNECT_TIMEOUT_S)
        stopped: str | None = None
        started = self._clock()
        async with httpx.AsyncClient(base_url=base, trust_env=False, timeout=timeout, limits=limits,
                                     transport=self._transport) as client:  # fmt: skip
            next_index = iter(range(plan.requests))

            async def worker() -> None:
                for i in next_index:
                    await self._one(client, i)

            workers = [asyncio.ensure_future(worker()) for _ in range(min(plan.concurrency, plan.requests))]
            try:
                done, pending = await asyncio.wait(workers, timeout=max(0.0, deadline - self._clock()))
                if pending:
                    stopped = f"time cap {plan.timeout_s:g} s"
                    self._capped = True  # the requests still running are counted as failed
                for task in done:
                    task.result()
            finally:
                for task in workers:
                    task.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
            elapsed = self._clock() - started
            metrics = await self._metrics(client, deadline, notes)
        log_text = await self._log_since(log_offset, deadline, notes)
        return summarize(
            self.progress.samples, elapsed_s=elapsed, sampling=plan.sampling, planned=plan.requests,
            concurrency=min(plan.concurrency, plan.requests), stopped=stopped,
            log_accept=log_accept_len(log_text) if log_text else None,
            metrics_accept=metrics_accept_len(metrics) if metrics else None, notes=tuple(notes),
        )  # fmt: skip

    async def _one(self, client: httpx.AsyncClient, i: int) -> None:
        prompt = self.plan.prompt(i)
        body = {"text": prompt.text, "sampling_params": self.plan.sampling.params(), "stream": True}
        p = self.progress
        p.sent += 1
        p.in_flight += 1
        sent = self._clock()
        first: float | None = None
        last_meta: dict[str, object] = {}
        verify: int | None = None
        try:
            async with client.stream("POST", "/generate", json=body) as response:
                if response.status_code != 200:
                    detail = (await head(response, ERROR_BODY_MAX))[:120].decode("utf-8", "replace").strip()
                    raise _Failed(f"HTTP {response.status_code}" + (f": {detail}" if detail else ""))
                async for line in lines_capped(response, STREAM_LINE_MAX, "/generate"):
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    try:
                        chunk = json.loads(data, parse_constant=_no_constant)
                    except _Failed:
                        raise
                    except (ValueError, RecursionError):
                        raise _Failed(f"not JSON in the stream: {data[:60]!r}") from None
                    if not isinstance(chunk, dict):
                        raise _Failed(f"unexpected chunk: {data[:60]!r}")
                    if "error" in chunk:
                        err = chunk["error"]
                        raise _Failed(f"server error: {err.get('message') if isinstance(err, dict) else err}")
                    meta = chunk.get("meta_info")
                    if isinstance(meta, dict):
                        last_meta = meta
                        if meta.get("spec_verify_ct") is not None:
                            verify = _count(meta, "spec_verify_ct")
                    if first is None and (chunk.get("text") or _tokens(last_meta) > 0):
                        first = self._clock() - sent
            end = self._clock() - sent
            finish = last_meta.get("finish_reason")
            if isinstance(finish, dict) and finish.get("type") == "abort":
                raise _Failed(f"aborted by the server: {finish.get('message') or 'no reason given'}")
            tokens = _tokens(last_meta)
            if tokens <= 0:
                raise _Failed("no tokens streamed")
            sample = Sample(True, prompt.name, first, end, tokens, verify)
        except (_Failed, BodyTooLarge) as err:
            sample = Sample(False, prompt.name, error=str(err))
        except httpx.TimeoutException:
            sample = Sample(False, prompt.name, error="timed out")
        except httpx.HTTPError as err:
            sample = Sample(False, prompt.name, error=classify_error(err)[1])
        except HostError as err:
            sample = Sample(False, prompt.name, error=str(err))
        except (OSError, ValueError, RuntimeError) as err:  # anything else the link throws: counted, not a crash
            sample = Sample(False, prompt.name, error=f"{type(err).__name__}: {err}")
        except asyncio.CancelledError:
            p.in_flight -= 1
            if self._capped:
                p.samples.append(
                    Sample(False, prompt.name, error=f"stopped by the time cap ({self.plan.timeout_s:g} s)")
                )
                p.done += 1
                p.failed += 1
            raise
        p.in_flight -= 1
        p.samples.append(sample)
        p.done += 1
        p.failed += 0 if sample.ok else 1

    # ---------------------------------------------------------------------------------- cross-checks

    async def _metrics(self, client: httpx.AsyncClient, deadline: float, notes: list[str]) -> str | None:
        """`/metrics` once, capped and within the time left (None when the server does not expose it: no
        --enable-metrics; or when it cannot be read, with a note)."""
        left = min(METRICS_TIMEOUT_S, deadline - self._clock())
        if left <= 0:
            notes.append(f"no /metrics cross-check: the time cap ({self.plan.timeout_s:g} s) was reached")
            return None
        try:
            response = await get_capped(client, "/metrics", cap=METRICS_BODY_MAX, total_s=left)
        except BodyTooLarge as err:
            notes.append(f"no /metrics cross-check: {err}")
            return None
        except httpx.TimeoutException:
            notes.append(f"no /metrics cross-check: no whole answer in {left:.1f} s")
            return None
        except httpx.HTTPError:
            return None
        return response.text if response.status_code == 200 else None

    async def _log_size(self, deadline: float) -> int | None:
        left = min(LOG_SIZE_TIMEOUT_S, deadline - self._clock())
        if not self.log_path or left <= 0:
            return None
        try:
            result = await self.host.run(f"wc -c < {shlex.quote(self.log_path)}", timeout=left)
        except (HostError, TimeoutError):
            return None
        try:
            return int(result.stdout.split()[0]) if result.returncode == 0 else None
        except (ValueError, IndexError):
            return None

    async def _log_since(self, offset: int | None, deadline: float, notes: list[str]) -> str:
        if offset is None or not self.log_path:
            return ""
        left = min(LOG_READ_TIMEOUT_S, deadline - self._clock())
        if left <= 0:
            notes.append(f"no log cross-check: the time cap ({self.plan.timeout_s:g} s) was reached")
            return ""
        command = f"tail -c +{offset + 1} -- {shlex.quote(self.log_path)} | head -c {LOG_READ_MAX}"
        try:
            result = await self.host.run(command, timeout=left)
        except TimeoutError:
            notes.append(f"no log cross-check: the log was not read back in {left:.1f} s")
            return ""
        except HostError:
            return ""
        return result.stdout.decode("utf-8", "replace")


class _Failed(Exception):
    pass


def _no_constant(name: str) -> object:
    """Python's json takes NaN and Infinity; they are not JSON, and SGLang never sends them."""
    raise _Failed(f"{name} in the stream: not JSON, and no figure SGLang sends")


def _count(meta: dict[str, object], name: str) -> int:
    """A count from meta_info: a whole number 0..MAX_COUNT; _Failed for anything else (a float such as 3.0 is
    taken)."""
    value = meta.get(name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise _Failed(f"odd {name} in meta_info: {str(value)[:40]!r}")
    return value


def _tokens(meta: dict[str, object]) -> int:
    return _count(meta, "completion_tokens") if meta.get("completion_tokens") is not None else 0
