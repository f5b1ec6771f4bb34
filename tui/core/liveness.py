"""Whether a verdict rests on a liveness check made at or after the facts it reports (issue 26).

`wait` reports nothing that came after its last look at the server's life:
- ready: `wait` looks once more after the last fact (a fresh process scan where it can see the processes, else
  one /health), folded alone, and says ready only when that look confirms it: the latest liveness evidence
  (this server's /health 200, or a process-watch report that saw its processes alive) is then the state's last
  event. A server that died inside the hold for the /server_info read, or one scheduler rank of it, is failed.
- failed, from the log: where a process watch can see, not before its first report: a process that holds the
  log open and has not written to it yet is a retry after the crash (tui.core.fold_sources.retry_in_the_log).
- failed, from the processes (one gone, or all): a moment for the log's own line, which names the cause.
Pure: facts in, yes or no out.
"""

from __future__ import annotations

from tui.core.explain import from_processes
from tui.core.state import Phase, Readiness

FIRST_REPORT_S = 5.0  # how long a failure from the log waits for the process watch's first report
CAUSE_S = 0.75  # how long a failure from the processes waits for the log's line (tail's poll, 0.25 s, and transit)
READY_PHASES = (Phase.READY, Phase.SERVING)


def liveness_at(s: Readiness) -> float | None:
    """The clock time of the latest evidence that the server lives: its /health 200 (while it still answers
    200) or a process-watch report that saw its processes alive. None: none."""
    times = []
    if s.health_ready:
        times.append(dict(s.health_checked_at).get("/health"))
    if s.process_alive is True and s.process_visible:
        times.append(s.process_checked_at)
    known = [t for t in times if t is not None]
    return max(known) if known else None


def ready_confirmed(s: Readiness) -> bool:
    """Ready (or serving), and nothing came after the last liveness evidence (exact only for a check folded
    alone: events of one batch share one clock time)."""
    at = liveness_at(s)
    return s.phase in READY_PHASES and at is not None and at >= s.updated_at


def failure_settling(s: Readiness, now: float) -> bool:
    """A failed state that may still turn out otherwise (or name its cause better) a moment from now."""
    error = s.error
    if s.phase is not Phase.FAILED or error is None or error.stopped_by:
        return False
    waited = now - s.phase_since
    if from_processes(error):
        return waited < CAUSE_S
    unreported = s.process_watched is True and s.process_visible and s.process_checked_at is None
    return unreported and waited < FIRST_REPORT_S
