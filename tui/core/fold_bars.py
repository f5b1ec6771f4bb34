"""Progress bars: the weights' (the draft's apart, as the parser names it), capture, piecewise, JIT and warmup bars, each with its rate; and the weight files' size on the host."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from tui.core import clocks
from tui.core.events import (
    BarProgress,
    WeightFiles,
)
from tui.core.fold_log import log_seen
from tui.core.fold_phase import advance
from tui.core.progress import BarWords, advance_bar, is_complete, start_bar
from tui.core.state import (
    BarState,
    Facts,
    Phase,
    Readiness,
)
from tui.core.timeline import close_draft, open_draft

# Bars other than the weights' and the classic capture's: the phase each one shows (None: a step inside a phase).
# DeepGEMM's JIT runs at the first forward (a window that starts at its bar is past the KV pool, at least).
BAR_PHASE: dict[str, Phase | None] = {"piecewise": Phase.CUDA_GRAPH, "jit": Phase.KV_CACHE, "warmup": Phase.WARMUP}


OtherBar = Literal["piecewise", "jit", "warmup_bar"]  # the bars other_bar keeps, by their facts' names
BAR_FIELDS: dict[str, OtherBar] = {"piecewise": "piecewise", "jit": "jit", "warmup": "warmup_bar"}


def on_bar(s: Readiness, ev: BarProgress, now: float) -> Readiness:
    s = log_seen(s, ev.at, now, ev.rank, what=f"log: {ev.bar} bar", t=ev.t)
    if ev.bar == "weights":  # the parser decides which bars and loads are the draft model's
        old = s.shards
        bar, _ = framed(s, ev, old, old is None or old.total != ev.total, now, {"label": ev.label})
        if bar.rate_per_s is None and ev.remaining_s is not None and not is_complete(bar):
            bar = replace(bar, eta_s=ev.remaining_s)  # tqdm's own estimate until we have a rate
        s = s.evolve(shards=bar, launched=True)
        if old is None or bar.done != old.done:
            s = s.evolve(last_progress=f"shards {bar.done}/{bar.total}")
        return advance(s, Phase.LOADING_WEIGHTS, ev.at, ev.t, now)
    if ev.bar == "draft_weights":
        return draft_bar(s, ev, now)
    if ev.bar in ("capture", "piecewise") and s.capture_now != ev.bar:
        s = s.evolve(capture_now=ev.bar)  # a frame of the other capture's bar: that capture runs now
    if ev.bar in ("capture", "piecewise") and ev.done > 0 and s.jit_active:
        s = s.evolve(jit_active=False)  # a graph captured: the JIT compile that its first forward ran is over
    if ev.bar in BAR_FIELDS:
        return other_bar(s, ev, now)
    if ev.bar == "capture":
        old = s.capture
        extra: BarWords = {"bs": ev.bs, "avail_mem_gb": ev.avail_mem_gb, "label": ev.label}
        fresh = old is None or old.total != ev.total or ev.done < old.done
        bar, _ = framed(s, ev, old, fresh, now, extra, extra)
        s = s.evolve(capture=bar, launched=True)
        if bar != old:
            s = s.evolve(last_progress=f"capture {bar.done}/{bar.total}")
        return advance(s, Phase.CUDA_GRAPH, ev.at, ev.t, now)
    return s


def other_bar(s: Readiness, ev: BarProgress, now: float) -> Readiness:
    """Piecewise capture, DeepGEMM JIT and warmup bars: each its own progress (a new bar when the total changes)."""
    name = BAR_FIELDS[ev.bar]
    old: BarState | None = getattr(s, name)
    extra: BarWords = {"bs": ev.bs, "avail_mem_gb": ev.avail_mem_gb, "label": ev.label}
    bar, _ = framed(s, ev, old, old is None or old.total != ev.total or ev.done < old.done, now, extra, extra)
    facts: Facts = {"launched": True}
    facts[name] = bar
    s = s.evolve(**facts)
    if bar != old:
        s = s.evolve(last_progress=f"{ev.label or ev.bar} {bar.done}/{bar.total}")
    if ev.bar == "jit" and not s.jit_active:
        s = s.evolve(jit_active=True)
    target = BAR_PHASE[ev.bar]
    return advance(s, target, ev.at, ev.t, now) if target is not None else s


def framed(
    s: Readiness,
    ev: BarProgress,
    old: BarState | None,
    fresh: bool,
    now: float,
    first: BarWords,
    every: BarWords | None = None,
) -> tuple[BarState, float]:
    """(the bar after this frame, when the frame was printed on our clock): a new bar when `fresh` (with the facts
    in `first`), else `old` advanced (with those in `every`)."""
    at, zero = frame_time(s, ev, None if fresh else old, now)
    when, clock = bar_time(ev, at)
    given = first if fresh or old is None else (every or {})
    words: BarWords = {**given, "zero_at": zero}
    if fresh or old is None:
        return start_bar(ev.done, ev.total, when, clock, at, **words), at
    return advance_bar(old, ev.done, when, clock, at, **words), at


def bar_time(ev: BarProgress, at: float) -> tuple[float, str]:
    """The time axis of a bar's rate: tqdm's own elapsed (printed in the frame, 1 s steps), else log time, else
    when the frame was printed on our clock (frame_time: a burst of history frames shares one, so no rate)."""
    if ev.elapsed_s is not None:
        return ev.elapsed_s, "tqdm"
    if ev.t is not None:
        return ev.t, "log"
    return at, "clock"


def frame_time(s: Readiness, ev: BarProgress, old: BarState | None, now: float) -> tuple[float, float | None]:
    """(when the frame was printed, the bar's tqdm zero), on our clock. A live frame or a timestamped one: its
    time (tui.core.clocks). A frame of the history without a stamp: its bar's zero plus tqdm's elapsed, the zero
    taken no later than the last timestamped line before the bar; never after the history's last write."""
    elapsed = ev.elapsed_s
    if ev.t is not None or clocks.live(s):
        at = clocks.event_time(s, ev.t, now)
        return at, (at - elapsed if elapsed is not None else (old.zero_at if old is not None else None))
    floor = clocks.event_time(s, None, now)
    zero = old.zero_at if old is not None else None
    if elapsed is None:
        return floor, zero
    if zero is None:
        zero = floor - elapsed
    clock = s.clock
    ceiling = min(now, clock.history_at) if clock is not None and clock.history_at is not None else now
    return min(ceiling, max(floor, zero + elapsed)), zero


def draft_bar(s: Readiness, ev: BarProgress, now: float) -> Readiness:
    old = s.draft_shards
    fresh = old is None or old.total != ev.total or (is_complete(old) and ev.done < old.done)
    bar, at = framed(s, ev, old, fresh, now, {"label": ev.label})
    timeline = open_draft(s.timeline, Phase.LOADING_WEIGHTS, ev.at, ev.t, at)
    if is_complete(bar):
        timeline = close_draft(timeline, Phase.LOADING_WEIGHTS, ev.at, ev.t, at)
    s = s.evolve(draft_shards=bar, timeline=timeline, launched=True)
    if old is None or bar.done != old.done:
        s = s.evolve(last_progress=f"draft shards {bar.done}/{bar.total}")
    return s


def on_weight_files(s: Readiness, ev: WeightFiles, now: float) -> Readiness:
    if ev.total_bytes is None or ev.total_bytes <= 0:
        return s
    return s.evolve(weight_files=(ev.model, ev.total_bytes, ev.files))
