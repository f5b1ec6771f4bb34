"""The readiness model as Prometheus metrics (the text exposition format 0.0.4): one server, a deployment's
members, or a fleet, each state one set of series under its `server` label (and `member`, for a deployment's).

Names follow Prometheus' conventions: the `sglang_tui_` prefix, base units (`_seconds`, `_bytes`), `_total` only
on counters (there are none: every figure here is a gauge of the state now), one HELP and TYPE per family, the
families' lines together, label values escaped. A figure that cannot be known honestly (no ETA, no history,
no GPU reading) is left out rather than written as 0 or NaN, as `wait --json` writes null. examples/README.md's table
documents each family (tests/test_metrics.py checks it against FAMILIES).

Pure: the states and the clock in, text out. Every fact is read from the state or decided by its own module
(the ETA by tui.core.eta, the stall budget by tui.core.stall, the verdict by tui.core.verdict, freshness by
tui.core.freshness), so `export` says what
`wait`, the TUI and `probe` say.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tui.core.deployment import Combined
from tui.core.eta import RATIO_FLOOR_S, STARTUP_PHASES, estimate
from tui.core.freshness import is_lost, last_seen_s
from tui.core.stall import budget_for, quiet_since
from tui.core.state import PHASE_ORDER, Phase, Readiness
from tui.core.timeline import span_duration
from tui.core.verdict import decide
from tui.core.vocab import ERROR_KINDS

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
FAILURE_KINDS = (*sorted(ERROR_KINDS), "stopped")  # a stop (ours or from outside) is told apart from a failure


@dataclass(frozen=True)
class Family:
    name: str
    help: str
    labels: tuple[str, ...] = ()  # beyond server (and member)


FAMILIES: tuple[Family, ...] = (
    Family("sglang_tui_phase", "1 for the startup phase the server is in, 0 for the others", ("phase",)),
    Family("sglang_tui_phase_elapsed_seconds", "Seconds since the current phase began"),
    Family(
        "sglang_tui_ready", "1 when the verdict is ready or serving (this server's /health 200, its host reachable)"
    ),
    Family("sglang_tui_ready_in_seconds", "ETA to ready (history and live progress); absent when not known"),
    Family("sglang_tui_phase_left_seconds", "Seconds the current phase has left; absent when not known"),
    Family("sglang_tui_stalled", "1 when no signal has progressed for longer than the phase allows"),
    Family("sglang_tui_quiet_seconds", "Seconds since the last progress on any signal (log, shards, GPU memory)"),
    Family("sglang_tui_stall_budget_seconds", "How long the current phase may be quiet before it is stalled"),
    Family("sglang_tui_failed", "1 for the kind of failure the startup ended in, 0 for the others", ("kind",)),
    Family("sglang_tui_weight_shards_loaded", "Weight shards loaded (the main model's bar)"),
    Family("sglang_tui_weight_shards", "Weight shards of the main model"),
    Family("sglang_tui_gpu_memory_used_bytes", "GPU memory used, per GPU, with the rank on it", ("gpu", "rank")),
    Family("sglang_tui_health_ok", "1 when the last /health probe answered 200 (0 while the host is lost)"),
    Family("sglang_tui_connected", "1 while the host is connected"),
    Family("sglang_tui_up", "1 while the server's facts are fresh (its host answers), 0 while it cannot be reached"),
    Family("sglang_tui_last_seen_seconds", "Seconds since the host last answered, while it cannot be reached"),
    Family("sglang_tui_startup_phase_seconds", "Seconds each finished phase of the current launch took", ("phase",)),
    Family("sglang_tui_startup_seconds", "Seconds from the launch's first phase to ready (once ready)"),
    Family("sglang_tui_usual_phase_seconds", "Median seconds of each phase over the earlier launches", ("phase",)),
    Family("sglang_tui_phase_usual_ratio", "Seconds in the current phase over its usual (median) duration"),
    Family("sglang_tui_past_launches", "Earlier ready launches of the same key behind the usual figures"),
    Family("sglang_tui_info", "1, with what the log says the server is", ("model", "version", "tp", "speculative")),
    Family(
        "sglang_tui_benchmark_disagrees",
        "1 when an srtctl job's benchmark word disagrees with its servers' (0 generated tokens, or srtctl says ready "
        "while the workers' logs do not); srtctl jobs only",
    ),
)
_BY_NAME = {f.name: f for f in FAMILIES}


@dataclass(frozen=True)
class Exported:
    """One state to export: a server's (member None) or a deployment member's."""

    server: str
    state: Readiness
    member: str | None = None


Sample = tuple[str, dict[str, str], float]


def exposition(entries: Sequence[Exported], now: float) -> str:
    """The whole /metrics body (or textfile) for these states at clock time `now`."""
    samples: list[Sample] = []
    for entry in entries:
        base = {"server": entry.server}
        if entry.member is not None:
            base["member"] = entry.member
        samples.extend((name, {**base, **labels}, value) for name, labels, value in series(entry.state, now))
    out: list[str] = []
    for family in FAMILIES:
        rows = [s for s in samples if s[0] == family.name]
        if not rows:
            continue
        out.append(f"# HELP {family.name} {_help(family.help)}")
        out.append(f"# TYPE {family.name} gauge")
        out.extend(f"{name}{_labels(labels)} {_value(value)}" for name, labels, value in rows)
    return "\n".join(out) + "\n" if out else ""


def series(s: Readiness, now: float) -> Iterable[Sample]:
    """(family, labels beyond server/member, value) of one state."""
    for phase in PHASE_ORDER:
        yield "sglang_tui_phase", {"phase": phase.value}, float(s.phase is phase)
    if s.phase_since:
        yield "sglang_tui_phase_elapsed_seconds", {}, max(0.0, now - s.phase_since)
    yield "sglang_tui_ready", {}, float(decide(s).kind in ("ready", "serving"))  # a lost host is not ready
    eta = estimate(s, now)
    if eta.ready_in_s is not None:
        yield "sglang_tui_ready_in_seconds", {}, eta.ready_in_s
    if eta.phase_left_s is not None:
        yield "sglang_tui_phase_left_seconds", {}, eta.phase_left_s
    yield "sglang_tui_stalled", {}, float(s.stall is not None)
    budget = budget_for(s)  # the stall rule's own quiet time and budget: the figures `wait` and the board say
    since = quiet_since(s)
    if budget is not None and since is not None:
        yield "sglang_tui_quiet_seconds", {}, max(0.0, now - since)
        yield "sglang_tui_stall_budget_seconds", {}, budget
    failed = failure_kind(s)
    for kind in FAILURE_KINDS:
        yield "sglang_tui_failed", {"kind": kind}, float(kind == failed)
    if s.shards is not None:
        yield "sglang_tui_weight_shards_loaded", {}, float(s.shards.done)
        yield "sglang_tui_weight_shards", {}, float(s.shards.total)
    yield from _gpu_series(s)
    if s.health_probed is not False and s.health_checked_at:
        yield "sglang_tui_health_ok", {}, float(s.health_ready and not is_lost(s))  # a 200 from before it was lost
    yield "sglang_tui_connected", {}, float(s.connection == "connected")
    yield "sglang_tui_up", {}, float(not is_lost(s) and s.connection == "connected")
    seen = last_seen_s(s, now)
    if seen is not None:
        yield "sglang_tui_last_seen_seconds", {}, seen
    yield from _startup_series(s)
    yield from _usual_series(s, now)
    info = s.server
    yield "sglang_tui_info", {
        "model": info.model or "", "version": info.version or "",
        "tp": str(info.tp_size) if info.tp_size is not None else "", "speculative": info.speculative or "",
    }, 1.0  # fmt: skip
    if isinstance(s, Combined) and s.deployment.benchmark is not None:  # the fact the fold made (issue 36)
        yield "sglang_tui_benchmark_disagrees", {}, float(s.benchmark_disagrees is not None)


def failure_kind(s: Readiness) -> str | None:
    """The failed family's kind: the error's, "stopped" for a stop, "other" for a failure with no line."""
    if s.phase is not Phase.FAILED:
        return None
    if s.error is None:
        return "other"
    return "stopped" if s.error.stopped_by else s.error.kind


def _gpu_series(s: Readiness) -> Iterable[Sample]:
    if s.gpus is None:
        return
    ranks = {r.gpu_index: r.name for r in s.ranks if r.gpu_index is not None}
    for gpu in s.gpus.gpus:
        if gpu.used_bytes is not None:
            yield (
                "sglang_tui_gpu_memory_used_bytes",
                {"gpu": str(gpu.index), "rank": ranks.get(gpu.index, "")},
                float(gpu.used_bytes),
            )


def _startup_series(s: Readiness) -> Iterable[Sample]:
    """The current launch's finished main phases (a phase entered twice counts once, summed), and its total."""
    took: dict[str, float] = {}
    for span in s.timeline:
        if span.model != "main" or span.ended_at is None or span.phase not in STARTUP_PHASES:
            continue
        seconds = span_duration(span)
        if seconds is not None:
            took[span.phase.value] = took.get(span.phase.value, 0.0) + seconds
    for phase, seconds in took.items():
        yield "sglang_tui_startup_phase_seconds", {"phase": phase}, seconds
    if s.phase in (Phase.READY, Phase.SERVING) and took:
        yield "sglang_tui_startup_seconds", {}, sum(took.values())


def _usual_series(s: Readiness, now: float) -> Iterable[Sample]:
    past = s.past
    if past is None:
        return
    yield "sglang_tui_past_launches", {}, float(past.count)
    for phase in STARTUP_PHASES:
        median = past.median(phase.value)
        if median is not None:
            yield "sglang_tui_usual_phase_seconds", {"phase": phase.value}, median
    median = past.median(s.phase.value) if s.phase in STARTUP_PHASES else None
    if median and median >= RATIO_FLOOR_S and s.phase_since:  # no ratio over a median within the stamps' error
        yield "sglang_tui_phase_usual_ratio", {}, max(0.0, now - s.phase_since) / median


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in labels.items()) + "}" if labels else ""


def escape(value: str) -> str:
    """A label value as the exposition format writes it: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 2**53:
        return str(int(value))
    return f"{value:.6g}" if abs(value) < 1e-3 else f"{value:.3f}".rstrip("0").rstrip(".")


def family(name: str) -> Family:
    return _BY_NAME[name]
