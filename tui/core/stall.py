"""The stall rule: no progress on any signal for longer than the phase normally allows, while the process lives.

Signals are log bytes, shard count, GPU memory change and capture batches (the reducer stamps
`last_progress_at` when any of them moves: for the log's signals, when the log says they moved, so a watch that
attaches to a load hung for 2 minutes counts 2 minutes of silence at once; tui.core.clocks). A dead process is `failed`, never stalled; ready, serving
and failed are never stalled. Limits per phase (seconds), each overridable by `Readiness.stall_after`:

- starting 10 min: spawning schedulers, importing torch, fetching the config.
- init 10 min: NCCL rendezvous sits silent until every rank joins (torch's dist timeout is 600 s).
- loading_weights before the first shard frame 20 min: an HF download is silent (SGLang disables its
  progress bar) and leaves GPU memory unchanged, so no signal moves until the shard bar appears.
- loading_weights once shards move: max(3 min, 10 x the mean shard interval): a large shard is silent.
- kv_cache 5 min, cuda_graph 5 min (capture batches tick every second or so).
- warmup 10 min: SGLang's warmup request may wait up to 600 s, and JIT kernels compile silently there.
- a DeepGEMM JIT session (`Entering DeepGEMM JIT Pre-Compile session`) under way: at least 20 min.

With history (`Readiness.past`, issue 9), a phase's budget comes from its earlier launches instead:
HISTORY_FACTOR x its median duration, at least HISTORY_FLOOR_S (the shard-interval rule still applies once
shards move).
"""

from __future__ import annotations

from tui.core import clocks, fmt
from tui.core.find_grace import finding_the_server
from tui.core.progress import mean_interval
from tui.core.state import Phase, Readiness, StallInfo

MINUTE = 60.0
PHASE_LIMITS: dict[Phase, float] = {
    Phase.STARTING: 10 * MINUTE,
    Phase.INIT: 10 * MINUTE,
    Phase.LOADING_WEIGHTS: 3 * MINUTE,  # the floor once shards move; see limit_for
    Phase.KV_CACHE: 5 * MINUTE,
    Phase.CUDA_GRAPH: 5 * MINUTE,
    Phase.WARMUP: 10 * MINUTE,
}
BEFORE_FIRST_SHARD = 20 * MINUTE
JIT_COMPILE = 20 * MINUTE  # a DeepGEMM JIT session compiles silently between its lines ("typically 10-20 mins")
SHARD_INTERVALS = 10.0
HISTORY_FACTOR = 3.0
HISTORY_FLOOR_S = 120.0  # a silent phase (warmup, a JIT compile) is never cut shorter than this
NEVER_STALLED = (Phase.READY, Phase.SERVING, Phase.FAILED)


def limit_for(state: Readiness) -> float | None:
    """How long the current phase may go without progress; None where stalls do not apply."""
    if state.phase in NEVER_STALLED:
        return None
    if state.stall_after is not None:
        return max(0.0, state.stall_after)
    budget = history_budget(state)
    if state.phase is Phase.LOADING_WEIGHTS:
        if state.shards is None or state.shards.done == 0:
            return budget if budget is not None else BEFORE_FIRST_SHARD
        interval = mean_interval(state.shards)
        floor = PHASE_LIMITS[Phase.LOADING_WEIGHTS]
        return max(floor, SHARD_INTERVALS * interval) if interval else floor
    if budget is not None:
        return budget
    limit = PHASE_LIMITS.get(state.phase)
    if state.jit_active and limit is not None:
        return max(limit, JIT_COMPILE)
    return limit


def history_budget(state: Readiness) -> float | None:
    """The current phase's budget from the earlier launches of its key, None without history."""
    past = state.past
    median = past.median(state.phase.value) if past is not None else None
    if median is None:
        return None
    return max(HISTORY_FLOOR_S, HISTORY_FACTOR * median)


def quiet_since(state: Readiness) -> float | None:
    """Since when no signal has moved, on the reducer's clock: the last progress (from the log's own time for
    log signals, tui.core.clocks), else the first event; None before any, and while a watched log has not been
    looked at yet (its last line may be minutes old or a moment old: the first look says). Events of the log fed
    without a look (a test, a source with no look) are the old rule's: they happened at the reducer's now."""
    unread = state.log_offset == 0 and not state.launched
    if state.log_watched and state.clock is None and state.log_file is None and unread:
        return None
    return state.last_progress_at if state.last_progress_at is not None else state.first_seen_at


def budget_for(state: Readiness) -> float | None:
    """How long the current phase may be quiet before it is stalled; None where stalls do not apply (a dead
    process, ready, serving, failed)."""
    return None if state.process_alive is False else limit_for(state)


def stall_json(state: Readiness, now: float) -> dict[str, object]:
    """The `stall` object of `wait --json` / `replay --json` (DESIGN.md): the quiet time in whole seconds (a JSON
    line per tick at most) and the budget, null where stalls do not apply (ready, serving, failed, a dead process:
    nothing ticks there), and the last progress as the log prints its time."""
    since = quiet_since(state)
    budget = budget_for(state)
    return {
        "quiet_s": float(int(max(0.0, now - since))) if since is not None and budget is not None else None,
        "budget_s": round(budget, 1) if budget is not None else None,
        "last_progress_at": last_progress_text(state, since),
    }


def last_progress_text(state: Readiness, since: float | None) -> str | None:
    """The last progress as the log prints its time: its line's own stamp, else (log bytes, an untimed frame) its
    time rendered on the log's clock; None when it was not the log's or the log's clock is unknown."""
    if not state.last_progress_logged:
        return None
    return state.last_progress_log or clocks.log_text(state, since)


def stall_for(state: Readiness, now: float) -> StallInfo | None:
    """The stall verdict for `state` at `now`: StallInfo when silent too long, else None. While the bytes a look
    found are still being read, the verdict waits (as it stood): the phase they show is not known yet; and while
    the process watch has not found the server alive within its grace (an attach to a dead server's old log is
    failed once the grace is over, never stalled)."""
    if state.reading_history:
        return state.stall
    if finding_the_server(state, now):
        return None
    limit = budget_for(state)
    if limit is None:
        return None
    since = quiet_since(state)
    if since is None:
        return None
    if now - since <= limit:
        return None
    detail = f"last progress: {state.last_progress}" if state.last_progress else "no signal has moved yet"
    hang = known_hang(state)
    if hang is not None:
        detail += f"; {hang}"
    previous = state.stall
    if previous is not None and previous.since == since and previous.limit_s == limit and previous.detail == detail:
        return previous  # unchanged: equal states let views skip a redraw
    return StallInfo(since=since, limit_s=limit, detail=detail)


def known_hang(state: Readiness) -> str | None:
    """A stall right after a line that a known hang follows: the hang's name. Silence after `Registering N cuda graph
    addresses` (custom all-reduce registering the captured graphs' buffers) is FlashInfer's MLA hang
    (flashinfer-ai/flashinfer#825)."""
    m = state.latest_milestone
    if m is not None and m.kind == "graph_step" and "cuda graph addresses" in m.line and "Registering" in m.line:
        return "silent right after `Registering … cuda graph addresses`: the known FlashInfer MLA hang (flashinfer#825)"
    return None


def describe(stall: StallInfo, phase_name: str, now: float) -> str:
    """One line for a stall: "no progress on any signal for 5m12s (limit 5m00s in cuda_graph); last progress: …"."""
    return (
        f"no progress on any signal for {fmt.duration(now - stall.since)} "
        f"(limit {fmt.duration(stall.limit_s)} in {phase_name}); {stall.detail}"
    )
