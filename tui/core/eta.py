"""ETA to ready: the history of the same key (median per phase, spread) combined with the live progress of the
current phase, and an honest progress ETA that is withdrawn when progress stops.

Pure: `estimate(state, now)` reads only the state (its `past` is the history the caller loaded) and the clock.

- One rule for the time left of the current phase, which every view shows (the header's "ready in", the reason's
  and the panes' bar ETA, `wait`'s line and the JSON `eta` agree; `pace` is what a view shows beside a bar):
  the weights from GPU memory growth against the weight bytes per rank a past launch took (steady under the
  multi-thread loader's bursts), else from the shard bar: this launch's own progress says what is left of it, so
  a faster history does not shorten it. A capture bar is one graph's of several: the phase has at least what it
  says left, and with history, at least what the median leaves. With no progress, the median's rest. The later
  phases add their medians.
- While no progress arrives, a progress ETA decays with the silence through one mean interval between progress
  steps (the next step is due) and holds; after WITHDRAW_AFTER x that interval it is withdrawn (None), and the
  words say how long nothing moved and when the stall verdict comes: "no progress for 45 s · stalled at 3m00s".
- ready_in_s is None when it cannot be known honestly: no history, a withdrawn ETA, stalled, failed, ready.
"""

from __future__ import annotations

from tui.core import fmt
from tui.core.progress import is_complete, mean_interval
from tui.core.record import Record, record
from tui.core.stall import limit_for, quiet_since
from tui.core.state import PHASE_ORDER, BarState, Phase, Readiness, WeightsMem

# mean progress intervals of silence before a progress ETA is withdrawn: the next step is then overdue by a whole
# interval (progress stopped); until then the ETA counts down through one interval at most (the step due), never
# down a stuck bar (a capture's "~13 s" ran down to "~2.4 s" over three intervals before it was withdrawn)
WITHDRAW_AFTER = 2.0
MEM_WITHDRAW_FLOOR_S = 3.0  # GPU memory is sampled about once a second: a missed tick is not silence
SLOW_FACTOR = 1.5  # a phase past this many times its median is flagged
SLOW_MIN_LAUNCHES = 2  # ... once this many earlier launches had it
# ... and only over a median this long: a phase is timed by whole-second log stamps (±1 s), so under 5 s the
# error alone is 20% or more, and a 0.2 s KV-cache phase read "301× slower" where nothing was slow
RATIO_FLOOR_S = 5.0
STARTUP_PHASES = tuple(p for p in PHASE_ORDER if p not in (Phase.READY, Phase.SERVING, Phase.FAILED))
SHORT_NAMES = {
    "starting": "start",
    "init": "init",
    "loading_weights": "weights",
    "kv_cache": "KV cache",
    "cuda_graph": "capture",
    "warmup": "warmup",
}


@record
class Eta(Record):
    ready_in_s: float | None = None
    phase_left_s: float | None = None
    basis: str | None = None  # "history" | "progress" | None
    launches: int = 0  # earlier ready launches of this key behind the estimate
    source: str = ""  # what the phase's progress ETA rests on: "GPU memory", "shards", "batches", "history"
    silent_s: float | None = None  # set when the progress ETA was withdrawn: seconds with no progress
    stalled_at_s: float | None = None  # with silent_s: the silence at which the stall verdict comes
    totals: tuple[float, float] | None = None  # (shortest, longest) total of the earlier launches
    slow: tuple[str, float] | None = None  # (phase value, factor) when the current phase runs past its median

    def to_json(self) -> dict[str, object]:
        """The `eta` object of `wait --json` / `replay --json` (DESIGN.md)."""
        return {
            "ready_in_s": _round(self.ready_in_s),
            "phase_left_s": _round(self.phase_left_s),
            "basis": self.basis,
            "launches": self.launches,
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def estimate(state: Readiness, now: float) -> Eta:
    """The ETA of the state at clock time `now`."""
    s = state
    past = s.past
    launches = past.count if past is not None else 0
    totals = past.totals() if past is not None else ()
    spread = (min(totals), max(totals)) if totals else None
    if s.phase not in STARTUP_PHASES:
        return Eta(launches=launches, totals=spread)
    elapsed = max(0.0, now - s.phase_since) if s.phase_since else 0.0
    left, whole, source, silent = phase_progress(s, now)
    silent = shown_silence(s, silent, now)
    median = past.median(s.phase.value) if past is not None else None
    slow = _slow(s, elapsed)
    stalled_at = _stall_limit(s) if silent is not None else None
    if s.stall is not None or silent is not None:
        return Eta(launches=launches, source=source, silent_s=silent, stalled_at_s=stalled_at, totals=spread, slow=slow)
    if median is None:
        if left is None:
            return Eta(launches=launches, totals=spread, slow=slow)
        return Eta(phase_left_s=left, basis="progress", launches=launches, source=source, totals=spread, slow=slow)
    by_history = max(0.0, median - elapsed)
    if left is None and elapsed > median:  # running late with nothing that moves: "ready in ~0s" would be a guess
        return Eta(launches=launches, totals=spread, slow=slow)
    if left is None:
        phase_left = by_history
        source = "history"
    elif whole or elapsed > median:
        phase_left = left  # the progress of the whole phase (or running late: the history says nothing of the rest)
    else:
        phase_left = max(left, by_history)  # one bar of the phase's several: at least what it says
    later = sum(past.median(p.value) or 0.0 for p in _after(s.phase)) if past is not None else 0.0
    return Eta(
        ready_in_s=phase_left + later,
        phase_left_s=phase_left,
        basis="history",
        launches=launches,
        source=source,
        totals=spread,
        slow=slow,
    )


def _after(phase: Phase) -> tuple[Phase, ...]:
    i = STARTUP_PHASES.index(phase)
    return STARTUP_PHASES[i + 1 :]


def phase_progress(s: Readiness, now: float) -> tuple[float | None, bool, str, float | None]:
    """(seconds left, whether that is the whole phase's, source, silence when withdrawn) from the current
    phase's progress."""
    if s.phase is Phase.LOADING_WEIGHTS:
        expected = expected_weight_gib(s)
        by_mem = memory_left(s.weights_mem, expected, now)
        if by_mem is not None:
            left, _fraction, silent = by_mem
            return left, True, "GPU memory", silent
        if s.shards is not None and not is_complete(s.shards):
            left, silent = bar_left(s.shards, now)
            return left, True, "shards", silent
        return None, True, "", None
    if s.phase is Phase.CUDA_GRAPH and s.capture is not None and not is_complete(s.capture):
        left, silent = bar_left(s.capture, now)
        return left, False, "batches", silent  # one graph's bar of several
    return None, False, "", None


def pace(s: Readiness, bar: BarState, now: float) -> tuple[float | None, float | None]:
    """(seconds left, silence when withdrawn) that a view shows beside `bar`: for the main weights bar while the
    weights load, the phase's own (phase_progress: the figure the header's "ready in" rests on); for another
    bar, its own rate's (the phase's ready_in is never below it)."""
    if bar is s.shards and s.phase is Phase.LOADING_WEIGHTS:
        left, _whole, _source, silent = phase_progress(s, now)
    else:
        left, silent = bar_left(bar, now)
    return left, shown_silence(s, silent, now)


def shown_silence(s: Readiness, silent: float | None, now: float) -> float | None:
    """The silence shown once a progress ETA is withdrawn ("no progress for 45 s · stalled at 3m00s"): the stall
    rule's quiet time, the figure `stall.quiet_s` and the verdict give, never longer than the bar's own (a bar's
    untimed frames read at attach are placed no later than the log's last write, which is the quiet time's)."""
    if silent is None:
        return None
    since = quiet_since(s)
    return silent if since is None else max(0.0, min(silent, now - since))


def expected_weight_gib(s: Readiness) -> float | None:
    """GiB each rank's weights take: what the last launches' GPUs grew by, else the safetensors files' bytes on
    the host split over the tp x pp ranks (bf16 on disk and on the GPU alike; a quantizing load differs)."""
    if s.past is not None:
        found = s.past.weight_gib_per_rank()
        if found:
            return found
    files = s.weight_files
    if files is None or files[0] != s.server.model:
        return None
    ranks = max(1, (s.server.tp_size or 1) * (s.server.pp_size or 1))
    return files[1] / ranks / float(1 << 30)


def bar_left(bar: BarState, now: float) -> tuple[float | None, float | None]:
    """(seconds left, None) from a bar's rate, decayed by the silence since its last step through one mean step
    interval at most; (None, silence) once the silence passes WITHDRAW_AFTER x that interval."""
    silence = max(0.0, now - bar.updated_at)
    interval = mean_interval(bar)
    if interval is not None and silence > WITHDRAW_AFTER * interval:
        return None, silence
    if bar.eta_s is None:
        return None, None
    return max(0.0, bar.eta_s - (min(silence, interval) if interval is not None else silence)), None


def memory_left(
    mem: WeightsMem | None, expected_gib: float | None, now: float
) -> tuple[float | None, float, float | None] | None:
    """(seconds left, fraction, silence when withdrawn) from GPU memory growth; None when it cannot tell."""
    if mem is None or not expected_gib or len(mem.samples) < 2:
        return None
    grown = mem.samples[-1][1]
    fraction = grown / expected_gib
    if fraction >= 0.98:
        return None  # past what the weights took before: the bar knows better now
    silence = max(0.0, now - mem.moved_at)
    interval = mem.mean_move_interval()
    if interval is not None and silence > max(MEM_WITHDRAW_FLOOR_S, WITHDRAW_AFTER * interval):
        return None, fraction, silence
    (t0, g0), (t1, g1) = mem.samples[0], mem.samples[-1]
    if t1 <= t0 or g1 <= g0:
        return None
    rate = (g1 - g0) / (t1 - t0)
    left = (expected_gib - grown) / rate - max(0.0, now - t1)
    return max(0.0, left), fraction, None


def _slow(s: Readiness, elapsed: float) -> tuple[str, float] | None:
    past = s.past
    if past is None or len(past.durations(s.phase.value)) < SLOW_MIN_LAUNCHES:
        return None
    median = past.median(s.phase.value)
    if not median or median < RATIO_FLOOR_S or elapsed <= SLOW_FACTOR * median:
        return None
    return s.phase.value, elapsed / median


def slow_phases(s: Readiness) -> tuple[tuple[str, float], ...]:
    """Finished main phases of this launch that ran past SLOW_FACTOR x their median (for the summary)."""
    past = s.past
    if past is None:
        return ()
    found = []
    for span in s.timeline:
        if span.model != "main" or span.ended_at is None or span.duration_s is None:
            continue
        if len(past.durations(span.phase.value)) < SLOW_MIN_LAUNCHES:
            continue
        median = past.median(span.phase.value)
        if median and median >= RATIO_FLOOR_S and span.duration_s > SLOW_FACTOR * median:
            found.append((span.phase.value, span.duration_s / median))
    return tuple(found)


def _stall_limit(s: Readiness) -> float | None:
    return limit_for(s)  # the stall rule decides when silence becomes a stall


# ------------------------------------------------------------------------------------------------- words


def slow_words(phase: str, factor: float, *, past: bool = False) -> str:
    """ "capture 2.1× slower than usual" (live), "capture was 2.1× slower than usual" (once it is over)."""
    return f"{SHORT_NAMES.get(phase, phase)} {'was ' if past else ''}{factor:.1f}× slower than usual"


def withdrawn_words(eta: Eta) -> str:
    """ "no progress for 45 s · stalled at 3m00s" (the silence at which the stall verdict comes)."""
    silent = eta.silent_s or 0.0
    text = f"no progress for {int(silent)} s" if silent < 60 else f"no progress for {fmt.duration(silent)}"
    if eta.stalled_at_s is not None:
        text += f" · stalled at {fmt.duration(eta.stalled_at_s)}"
    return text


def eta_words(eta: Eta) -> str:
    """The header's words: "ready in ~4m10s · last 3 launches 9m02s–9m40s"; "" when nothing honest to say."""
    parts = []
    if eta.ready_in_s is not None:
        parts.append(f"ready in ~{fmt.duration(eta.ready_in_s)}")
    if eta.totals is not None and eta.launches:
        lo, hi = eta.totals
        span = fmt.duration(lo) if abs(hi - lo) < 1 else f"{fmt.duration(lo)}–{fmt.duration(hi)}"
        n = eta.launches
        parts.append(f"last {n} launch{'es' if n > 1 else ''} {span}")
    return " · ".join(parts)
