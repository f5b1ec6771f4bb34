"""SGLang's own startup numbers (`Engine startup timings (s): …`, since sgl-project/sglang#33375) against the
tool's phase durations: where they differ by more than TOLERANCE, both are worth a look.

SGLang's figures (0.5.23, engine.py `_set_startup_time`): load_weight (target + draft load_model, the slowest
rank), kv_cache_allocation, scheduler_e2e, cuda_graph={phase=seconds, …} (here summed: cuda_graph_total),
tokenizer_e2e. The tool's loading_weights / kv_cache / cuda_graph spans run from the first rank's begin line
to the next phase's first line, so a few percent of difference is expected; more than that is shown.
SGLang 0.5.23 also answers the same figures in /server_info's `startup_time` (tui.core.serverinfo): used when the
log has no such line. Its tokenizer_e2e (engine start to schedulers ready) is held against the tool's own total
before warmup (total_check).
"""

from __future__ import annotations

from tui.core.state import Readiness

TOLERANCE = 0.05
PAIRS = (("load_weight", "loading_weights"), ("kv_cache_allocation", "kv_cache"), ("cuda_graph_total", "cuda_graph"))
MIN_SECONDS = 1.0  # a log's timestamps are whole seconds: a difference within this says nothing


def crosscheck(state: Readiness) -> tuple[tuple[str, float, float, float], ...]:
    """(SGLang's name, SGLang's seconds, the tool's seconds, relative difference) beyond TOLERANCE."""
    theirs = sglang_figures(state)
    out = []
    for name, phase in PAIRS:
        sglang_s = theirs.get(name)
        ours = [s.duration_s for s in state.timeline if s.model == "main" and s.phase.value == phase]
        if sglang_s is None or not ours or any(d is None for d in ours):
            continue
        ours_s = float(sum(d for d in ours if d is not None))
        if abs(ours_s - sglang_s) <= MIN_SECONDS or sglang_s <= 0:
            continue
        diff = (ours_s - sglang_s) / sglang_s
        if abs(diff) > TOLERANCE:
            out.append((name, sglang_s, ours_s, diff))
    return tuple(out)


def sglang_figures(state: Readiness) -> dict[str, float]:
    """SGLang's own startup figures: the log's `Engine startup timings` line, else /server_info's startup_time."""
    return dict(state.startup_timings or state.startup_time)


BEFORE_WARMUP = ("starting", "init", "loading_weights", "kv_cache", "cuda_graph")


def total_check(state: Readiness) -> tuple[str, float, float, float] | None:
    """("tokenizer_e2e", SGLang's, the tool's main phases before warmup, difference) when past TOLERANCE."""
    sglang_s = sglang_figures(state).get("tokenizer_e2e")
    spans = [s for s in state.timeline if s.model == "main" and s.phase.value in BEFORE_WARMUP]
    if sglang_s is None or sglang_s <= 0 or not spans or any(s.duration_s is None for s in spans):
        return None
    ours_s = float(sum(s.duration_s for s in spans if s.duration_s is not None))
    diff = (ours_s - sglang_s) / sglang_s
    if abs(ours_s - sglang_s) <= MIN_SECONDS or abs(diff) <= TOLERANCE:
        return None
    return ("tokenizer_e2e", sglang_s, ours_s, diff)


def crosscheck_words(state: Readiness) -> str:
    """ "load_weight: SGLang 71.95 s, the log's phase 74.0 s (+3%)" for each difference past TOLERANCE."""
    words = [
        f"{name}: SGLang {theirs:.2f} s, the log's phase {ours:.1f} s ({diff * 100:+.0f}%)"
        for name, theirs, ours, diff in crosscheck(state)
    ]
    total = total_check(state)
    if total is not None:
        _, theirs, ours, diff = total
        words.append(
            f"tokenizer_e2e: SGLang {theirs:.2f} s, the log's phases to warmup {ours:.1f} s ({diff * 100:+.0f}%)"
        )
    return "; ".join(words)
