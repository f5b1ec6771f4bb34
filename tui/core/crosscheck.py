"""SGLang's own startup numbers (`Engine startup timings (s): …`, since sgl-project/sglang#33375) against the
tool's phase durations: where they differ by more than TOLERANCE, both are worth a look.

SGLang's figures (0.5.23, engine.py `_set_startup_time`): load_weight (target + draft load_model, the slowest
rank), kv_cache_allocation, scheduler_e2e, cuda_graph={phase=seconds, …} (here summed: cuda_graph_total),
tokenizer_e2e. The tool's loading_weights / kv_cache / cuda_graph spans run from the first rank's begin line
to the next phase's first line, so a few percent of difference is expected; more than that is shown.
"""

from __future__ import annotations

from tui.core.state import Readiness

TOLERANCE = 0.05
PAIRS = (("load_weight", "loading_weights"), ("kv_cache_allocation", "kv_cache"), ("cuda_graph_total", "cuda_graph"))
MIN_SECONDS = 1.0  # a log's timestamps are whole seconds: a difference within this says nothing


def crosscheck(state: Readiness) -> tuple[tuple[str, float, float, float], ...]:
    """(SGLang's name, SGLang's seconds, the tool's seconds, relative difference) beyond TOLERANCE."""
    theirs = dict(state.startup_timings)
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


def crosscheck_words(state: Readiness) -> str:
    """"load_weight: SGLang 71.95 s, the log's phase 74.0 s (+3%)" for each difference past TOLERANCE."""
    return "; ".join(
        f"{name}: SGLang {theirs:.2f} s, the log's phase {ours:.1f} s ({diff * 100:+.0f}%)"
        for name, theirs, ours, diff in crosscheck(state)
    )
