"""The serving loop of rank 0's scheduler: batches requests, emits tokens, logs Prefill/Decode batch lines.

Like SGLang, a `Decode batch` line is written every `decode_log_interval` (40) decode iterations counted
across requests, and nothing is written while idle. With EAGLE each verify step accepts 1–4 tokens.
Iterations follow the simulated clock (`--speed` makes them faster); printed throughputs are per real second.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field

from tui.sim.clock import SimClock
from tui.sim.logformat import LogFormat

DECODE_LOG_INTERVAL = 40
ITER_SECONDS = 0.012  # one verify/decode forward of a 70B model on 8 H200s
ITER_SECONDS_PER_REQ = 0.0003
ACCEPT_CHOICES = (1, 2, 3, 4)
DEFAULT_ACCEPT_LEN = 3.2  # a drafter that works: ≈3.2 tokens per verify step with 4 draft tokens
WORDS = [
    "",
    "Paris.",
    "It",
    "is",
    "the",
    "capital",
    "and",
    "most",
    "populous",
    "city",
    "of",
    "France,",
    "on",
    "the",
    "Seine",
    "river",
    "in",
    "the",
    "north",
    "of",
    "the",
    "country.",
    "The",
    "city",
    "is",
    "known",
    "for",
    "its",
    "museums,",
    "its",
    "architecture",
    "and",
    "its",
    "cafes,",
    "and",
    "it",
    "has",
    "been",
    "a",
    "major",
    "centre",
    "of",
    "finance,",
    "diplomacy,",
    "commerce,",
    "fashion",
    "and",
    "science",
    "for",
    "centuries.",
][1:]


@dataclass
class _Request:
    prompt: int
    max_new: int
    out: asyncio.Queue[int | None] = field(default_factory=asyncio.Queue)
    done: int = 0
    verify_ct: int = 0  # speculative verify steps (decode forwards) that produced this request's tokens


def accept_weights(mean: float) -> tuple[float, ...]:
    """P(a verify step yields k tokens), k = 1..4, when each draft token is accepted with probability p
    after an accepted one (a chain): mean 1 + p + p² + p³, p solved for `mean` (1 to 4)."""
    n = len(ACCEPT_CHOICES)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        p = (lo + hi) / 2
        lo, hi = (p, hi) if sum(p**k for k in range(n)) < mean else (lo, p)
    p = (lo + hi) / 2
    return tuple((1 - p) * p ** (k - 1) for k in range(1, n)) + (p ** (n - 1),)


def word(i: int) -> str:
    """The i-th generated token's text (deterministic filler)."""
    return " " + WORDS[i % len(WORDS)]


class Engine:
    """Owned by the main process's event loop; `write` appends a line to the log."""

    def __init__(self, fmt: LogFormat, clock: SimClock, write: Callable[[str], None], *, speculative: bool,
                 max_tokens: int, seed: int = 0, accept_len: float = DEFAULT_ACCEPT_LEN) -> None:  # fmt: skip
        self.fmt = fmt
        self.clock = clock
        self.write = write
        self.speculative = speculative
        self.accept_weights = accept_weights(accept_len)
        self.max_tokens = max(max_tokens, 1)
        self.rng = random.Random(seed)
        self.pending: list[_Request] = []
        self.running: list[_Request] = []
        self.iterations = 0
        self.window_tokens = 0
        self.window_steps = 0
        self.window_start = 0.0
        self.last_prefill = 0.0
        self.last_throughput = 0.0
        self.last_accept: float | None = None
        self.task: asyncio.Task[None] | None = None
        self.health_lock = asyncio.Lock()
        self.spec_verify_calls = 0  # all verify steps so far (sglang:spec_verify_calls_total)
        self.generation_tokens = 0  # all tokens generated so far (sglang:generation_tokens_total)

    async def generate(
        self, prompt_tokens: int, max_new_tokens: int, stats: dict[str, int] | None = None
    ) -> AsyncGenerator[int, None]:
        """Yields how many new tokens each step produced, until max_new_tokens were generated. `stats`, when
        given, holds the request's `verify_ct` as it goes. A caller that stops early aborts the request (as
        SGLang aborts one whose client went away): it leaves the batch at once."""
        req = _Request(max(prompt_tokens, 1), max(max_new_tokens, 1))
        self.pending.append(req)
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._loop())
        try:
            while True:
                n = await req.out.get()
                if stats is not None:
                    stats["verify_ct"] = req.verify_ct
                if n is None:
                    return
                yield n
        finally:
            for queue in (self.pending, self.running):
                if req in queue:
                    queue.remove(req)

    async def health(self, min_real_seconds: float) -> None:
        """SGLang's /health: a 1-token generation, one at a time, taking at least min_real_seconds."""
        async with self.health_lock:
            loop = asyncio.get_running_loop()
            start = loop.time()
            async for _ in self.generate(1, 1):
                pass
            await asyncio.sleep(max(min_real_seconds - (loop.time() - start), 0.0))

    @property
    def busy(self) -> int:
        return len(self.pending) + len(self.running)

    def _usage(self) -> tuple[int, float]:
        tokens = sum(r.prompt + r.done for r in self.running)
        return tokens, tokens / self.max_tokens

    def _prefill(self) -> None:
        new, self.pending = self.pending, []
        now = time.monotonic()
        new_tokens = sum(r.prompt for r in new)
        gap = now - self.last_prefill if self.last_prefill else 0.0
        throughput = new_tokens / gap if gap > 0 else 0.0
        self.last_prefill = now
        _, usage = self._usage()
        text = self.fmt.prefill(len(new), new_tokens, usage, len(self.running), throughput)
        self.write(self.fmt.line(self.clock.now(), text, 0))
        for req in new:  # the prefill forward produces each request's first token
            req.done = 1
            self.generation_tokens += 1
            req.out.put_nowait(1)
        self.running += new

    def _decode_step(self) -> None:
        self.iterations += 1
        for req in self.running:
            n = self.rng.choices(ACCEPT_CHOICES, self.accept_weights)[0] if self.speculative else 1
            n = min(n, req.max_new - req.done)
            req.done += n
            req.verify_ct += 1 if self.speculative else 0
            self.spec_verify_calls += 1 if self.speculative else 0
            self.generation_tokens += n
            self.window_tokens += n
            self.window_steps += 1
            req.out.put_nowait(n)
        if self.iterations % DECODE_LOG_INTERVAL == 0:
            self._log_decode()
        for req in [r for r in self.running if r.done >= r.max_new]:
            self.running.remove(req)
            req.out.put_nowait(None)

    def _log_decode(self) -> None:
        now = time.monotonic()
        span = max(now - self.window_start, 1e-6)
        throughput = self.window_tokens / span
        accept = rate = None
        if self.speculative and self.window_steps:
            accept = self.window_tokens / self.window_steps
            rate = (accept - 1) / 3 if self.fmt.new else accept / 4
        tokens, usage = self._usage()
        line = self.fmt.decode(len(self.running), tokens, usage, accept, rate, throughput)
        self.write(self.fmt.line(self.clock.now(), line, 0))
        self.last_throughput, self.last_accept = throughput, accept
        self.window_tokens = self.window_steps = 0
        self.window_start = now

    async def _loop(self) -> None:
        last = self.clock.elapsed()
        self.window_start = time.monotonic()  # a batch after an idle spell measures from its own start
        self.window_tokens = self.window_steps = 0
        while self.pending or self.running:
            if self.pending:
                self._prefill()
                for req in [r for r in self.running if r.done >= r.max_new]:
                    self.running.remove(req)
                    req.out.put_nowait(None)
            step = ITER_SECONDS + ITER_SECONDS_PER_REQ * len(self.running)
            await asyncio.sleep(max(self.clock.real(step), 0.002))
            now = self.clock.elapsed()
            steps = max(1, int((now - last) / step))
            last = max(last + steps * step, now - step)
            for _ in range(steps):
                if not self.running:
                    break
                self._decode_step()
