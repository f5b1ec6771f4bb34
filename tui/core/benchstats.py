"""What a bench measured, as facts: per-request samples → one frozen BenchResult; its JSON; a comparison.

Definitions (so two runs compare):
- TTFT: from sending the request to the first streamed chunk that carries a token, seen by the client
  (through the SSH forward, so it includes the link's round trip).
- output tok/s per request: decode speed, (completion_tokens − 1) / (last chunk − first chunk); a request
  that streamed one chunk only counts completion_tokens / its latency. The p50 is over the ok requests.
- output tok/s total: every ok request's completion_tokens over the bench's wall time (first send to last end).
- acceptance length: Σ completion_tokens / Σ spec_verify_ct over the requests whose meta_info has
  spec_verify_ct (SGLang's own per-request definition, bonus token included). None when no request has it:
  a server without speculative decoding has no acceptance length (not 1.0). Cross-checks: the mean of the
  decode lines' `accept len` written during the bench, and `/metrics` `sglang:spec_accept_length` (0 there
  means no speculative decoding). All three are exact for the bench only when nothing else is served.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from tui.core.lazyre import lazy
from tui.core.logbatch import batch_fields

SOURCES = ("meta_info", "log", "metrics")  # the order accept_len is taken in (first present wins)
DISAGREE = 0.25  # sources further apart than this (tokens per step) are called out


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0
    max_new_tokens: int = 256
    ignore_eos: bool = True  # every request generates max_new_tokens, so runs compare token for token

    def params(self) -> dict[str, object]:
        """SGLang's `sampling_params` for /generate."""
        return {"temperature": self.temperature, "max_new_tokens": self.max_new_tokens, "ignore_eos": self.ignore_eos}

    def words(self) -> str:
        return (f"temperature {self.temperature:g}, max_new_tokens {self.max_new_tokens}"
                + (", ignore_eos" if self.ignore_eos else ""))  # fmt: skip


@dataclass(frozen=True)
class Sample:
    """One request's outcome as the client saw it."""

    ok: bool
    prompt: str = ""
    ttft_s: float | None = None
    latency_s: float | None = None  # send → last chunk
    completion_tokens: int = 0
    spec_verify_ct: int | None = None
    error: str = ""

    @property
    def tok_s(self) -> float | None:
        if not self.ok or self.completion_tokens <= 0 or not self.latency_s:
            return None
        decode = self.latency_s - (self.ttft_s or 0.0)
        if self.completion_tokens > 1 and decode > 0:
            return (self.completion_tokens - 1) / decode
        return self.completion_tokens / self.latency_s


@dataclass(frozen=True)
class BenchResult:
    """A finished (or stopped) bench. `to_json()` holds the contract keys first, then extras."""

    ok: int
    failed: int
    ttft_p50: float | None
    ttft_p90: float | None
    tok_s_p50: float | None
    tok_s_total: float | None
    accept_len: float | None
    accept_sources: tuple[str, ...] = ()
    accept_by_source: tuple[tuple[str, float], ...] = ()
    sampling: Sampling = field(default_factory=Sampling)
    planned: int = 0
    not_sent: int = 0
    concurrency: int = 1
    output_tokens: int = 0
    elapsed_s: float = 0.0
    errors: tuple[str, ...] = ()  # distinct failure reasons, with counts
    stopped: str | None = None  # why it ended early: "interrupted", "time cap 60 s"
    notes: tuple[str, ...] = ()  # a cross-check not made, and why ("no /metrics cross-check: … more than 16 MiB")

    def source(self, name: str) -> float | None:
        return dict(self.accept_by_source).get(name)

    def to_json(self) -> dict[str, object]:
        return {
            "requests": {"ok": self.ok, "failed": self.failed},
            "ttft_s": {"p50": _round(self.ttft_p50, 4), "p90": _round(self.ttft_p90, 4)},
            "output_tok_s": {"per_request_p50": _round(self.tok_s_p50, 2), "total": _round(self.tok_s_total, 2)},
            "accept_len": _round(self.accept_len, 3),
            "accept_len_sources": list(self.accept_sources),
            "accept_len_by_source": {k: _round(v, 3) for k, v in self.accept_by_source},
            "bound": bound(self.accept_len),
            "sampling": self.sampling.params(),
            "planned": self.planned,
            "not_sent": self.not_sent,
            "concurrency": self.concurrency,
            "output_tokens": self.output_tokens,
            "elapsed_s": round(self.elapsed_s, 3),
            "errors": list(self.errors),
            "stopped": self.stopped,
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> BenchResult:
        """The inverse of to_json (for a stored result); unknown keys are ignored, missing ones default. ValueError
        (one line) when a value is none a bench gives: a stored row is only as good as its file."""
        try:
            return cls._from_json(obj)
        except (TypeError, ValueError, AttributeError, OverflowError) as err:
            raise ValueError(f"not a bench result ({type(err).__name__}: {str(err)[:80]})") from None

    @classmethod
    def _from_json(cls, obj: dict[str, Any]) -> BenchResult:
        req, ttft, tok = (obj.get(k) or {} for k in ("requests", "ttft_s", "output_tok_s"))
        samp = obj.get("sampling") or {}
        by = obj.get("accept_len_by_source") or {}
        return cls(
            ok=int(req.get("ok", 0)), failed=int(req.get("failed", 0)),
            ttft_p50=_figure(ttft.get("p50")), ttft_p90=_figure(ttft.get("p90")),
            tok_s_p50=_figure(tok.get("per_request_p50")), tok_s_total=_figure(tok.get("total")),
            accept_len=_figure(obj.get("accept_len")),
            accept_sources=tuple(str(k) for k in obj.get("accept_len_sources") or ()),
            accept_by_source=tuple((str(k), f) for k, v in by.items() if (f := _figure(v)) is not None),
            sampling=Sampling(float(samp.get("temperature", 0.0)), int(samp.get("max_new_tokens", 256)),
                              bool(samp.get("ignore_eos", True))),
            planned=int(obj.get("planned", 0)), not_sent=int(obj.get("not_sent", 0)),
            concurrency=int(obj.get("concurrency", 1)), output_tokens=int(obj.get("output_tokens", 0)),
            elapsed_s=float(obj.get("elapsed_s", 0.0)), errors=tuple(str(e) for e in obj.get("errors") or ()),
            stopped=str(obj["stopped"]) if obj.get("stopped") is not None else None,
            notes=tuple(str(n) for n in obj.get("notes") or ()),
        )  # fmt: skip


def _figure(value: object) -> float | None:
    """A stored figure: a finite number, or None; ValueError for anything else."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{str(value)[:40]!r} is not a figure")
    return float(value)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100) of the values; None for none."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def meta_accept_len(samples: list[Sample]) -> float | None:
    """Σ completion_tokens / Σ spec_verify_ct over the ok requests that report spec_verify_ct > 0."""
    spec = [s for s in samples if s.ok and s.spec_verify_ct]
    verify = sum(s.spec_verify_ct or 0 for s in spec)
    return sum(s.completion_tokens for s in spec) / verify if verify else None


def log_accept_len(text: str) -> float | None:
    """The mean `accept len` of the `Decode batch` lines in a stretch of log (rank-0 lines; any version)."""
    values = []
    for line in text.splitlines():
        if "Decode batch" in line and "accept len" in line:
            value = batch_fields(line.split("Decode batch", 1)[1]).get("accept len")
            if value is not None:
                values.append(value)
    return sum(values) / len(values) if values else None


_METRIC = lazy(r"^sglang:spec_accept_length(?:\{[^}]*\})?\s+([-+0-9.eE]+|NaN)\s*$", re.M)


def metrics_accept_len(text: str) -> float | None:
    """`sglang:spec_accept_length` from Prometheus text (the mean over its series); None when absent or 0
    (SGLang sets it to 0 without speculative decoding, and before the first decode-log window)."""
    values = []
    for raw in _METRIC.findall(text):
        try:
            value = float(raw)
        except ValueError:
            continue
        if math.isfinite(value) and value > 0:
            values.append(value)
    return sum(values) / len(values) if values else None


def _errors(samples: list[Sample]) -> tuple[str, ...]:
    counts: dict[str, int] = {}
    for s in samples:
        if not s.ok:
            counts[s.error or "failed"] = counts.get(s.error or "failed", 0) + 1
    return tuple(f"{n}× {why}" if n > 1 else why for why, n in counts.items())


def summarize(samples: list[Sample], *, elapsed_s: float, sampling: Sampling, planned: int, concurrency: int = 1,
              log_accept: float | None = None, metrics_accept: float | None = None,
              stopped: str | None = None, notes: tuple[str, ...] = ()) -> BenchResult:  # fmt: skip
    """The result of a bench from its samples and the cross-check figures."""
    ok = [s for s in samples if s.ok]
    ttfts = [s.ttft_s for s in ok if s.ttft_s is not None]
    rates = [r for r in (s.tok_s for s in ok) if r is not None]
    tokens = sum(s.completion_tokens for s in ok)
    found = {"meta_info": meta_accept_len(samples), "log": log_accept, "metrics": metrics_accept}
    by_source = tuple((k, v) for k, v in found.items() if v is not None)
    return BenchResult(
        ok=len(ok),
        failed=len(samples) - len(ok),
        ttft_p50=percentile(ttfts, 50),
        ttft_p90=percentile(ttfts, 90),
        tok_s_p50=percentile(rates, 50),
        tok_s_total=tokens / elapsed_s if ok and elapsed_s > 0 else None,
        accept_len=by_source[0][1] if by_source else None,
        accept_sources=tuple(k for k, _ in by_source),
        accept_by_source=by_source,
        sampling=sampling,
        planned=planned,
        not_sent=max(0, planned - len(samples)),
        concurrency=concurrency,
        output_tokens=tokens,
        elapsed_s=elapsed_s,
        errors=_errors(samples),
        stopped=stopped,
        notes=notes,
    )


# ------------------------------------------------------------------------------------------------ words


def bound(accept_len: float | None) -> str:
    """What an acceptance length bounds: each verify forward yields that many tokens on average, so
    decoding can be at most that many times faster than plain decoding (drafting costs come off it)."""
    if accept_len is None:
        return "no speculative decoding: plain decoding, one token per forward"
    return f"accept len {accept_len:.2f}: at most ~{accept_len:.1f}× over plain decoding"


def disagreement(result: BenchResult) -> str | None:
    """A line when the acceptance sources disagree by more than DISAGREE tokens per step."""
    values = result.accept_by_source
    if len(values) < 2:
        return None
    lo, hi = min(v for _, v in values), max(v for _, v in values)
    if hi - lo <= DISAGREE:
        return None
    shown = ", ".join(f"{k} {v:.2f}" for k, v in values)
    return f"the acceptance sources disagree ({shown}): other traffic, or a stretch of log outside the bench"


def _num(value: float | None, fmt: str, unit: str = "") -> str:
    return "—" if value is None else f"{value:{fmt}}{unit}"


def render(result: BenchResult) -> list[str]:
    """The lines a person reads after a bench (the CLI prints them; the TUI shows them)."""
    lines = []
    head = f"requests: {result.ok} ok, {result.failed} failed"
    if result.not_sent:
        head += f", {result.not_sent} not sent"
    if result.stopped:
        head += f" (stopped: {result.stopped})"
    lines.append(head + f" · {result.output_tokens} tokens in {result.elapsed_s:.1f} s, {result.concurrency} at a time")
    lines.append(f"TTFT: p50 {_num(result.ttft_p50, '.3f', ' s')}, p90 {_num(result.ttft_p90, '.3f', ' s')}")
    lines.append(
        f"output tok/s: per request p50 {_num(result.tok_s_p50, '.1f')}, total {_num(result.tok_s_total, '.1f')}"
    )
    if result.accept_len is None:
        lines.append("accept len: none (" + bound(None) + ")")
    else:
        checks = ", ".join(f"{k} {v:.2f}" for k, v in result.accept_by_source)
        lines.append(f"accept len: {result.accept_len:.2f} ({checks}) · {bound(result.accept_len)}")
    odd = disagreement(result)
    if odd:
        lines.append(odd)
    lines.append(f"sampling: {result.sampling.words()}")
    for why in result.errors[:5]:
        lines.append(f"failed: {why}")
    lines.extend(result.notes)
    return lines


def compare(previous: BenchResult | None, current: BenchResult) -> str:
    """One line against the last launch's bench, e.g. "accept len 1.52, last launch 3.10; tok/s 52, last 141"."""
    if previous is None:
        return "no earlier bench of this launch to compare with"

    def accept(r: BenchResult) -> str:
        return "none" if r.accept_len is None else f"{r.accept_len:.2f}"

    def rate(r: BenchResult) -> str:
        return "—" if r.tok_s_p50 is None else f"{r.tok_s_p50:.0f}"

    line = f"accept len {accept(current)}, last launch {accept(previous)}; tok/s {rate(current)}, last {rate(previous)}"
    if current.ttft_p50 is not None and previous.ttft_p50 is not None:
        line += f"; TTFT p50 {current.ttft_p50:.2f} s, last {previous.ttft_p50:.2f} s"
    if previous.sampling != current.sampling:
        line += f" (sampling differs: last {previous.sampling.words()})"
    return line
