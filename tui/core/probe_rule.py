"""What `sglang-tui probe` exits with for a state: the one rule, per mode, over the readiness model.

- `--ready`: 0 only when the full verdict is ready (ready or serving: this server's /health 200, as `wait`
  decides it) and /health still answers 200 (a readinessProbe follows the server after its startup too);
  still starting, or not answering now, is 7, as `wait` at its deadline (a probe is a wait with no time left).
- `--alive`: 0 while the startup progresses or the server is ready; non-zero only for a stall (3) or a failure
  (1, a stop included), so a livenessProbe restarts a hung startup and never a slow one.
- Both: 4 when the host cannot be reached (nothing is known), 2 when --log is a directory (it never becomes
  the log). Codes from DESIGN.md's one table: 0 ready, 1 failed, 2 bad arguments, 3 stalled, 4 cannot connect,
  5 cannot see the processes, 6 nothing found, 7 timed out. "Cannot see" is a note in the line, never an exit:
  readiness then rests on the log and /health, and death is never inferred.

`wait` holds a failure a moment for the log's line that names its cause (tui.core.liveness.failure_settling); a
probe does not: the exit is 1 either way, and its look at the processes comes in the same call as its read of the
log. Pure: the state, the mode and the clock in; the exit, its kind and one line out. When the verdict becomes data
of its own (issue 22), this is the one place that maps it to a probe's exit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tui.core.explain import explain, health_text, latest_health, log_file_line
from tui.core.stall import limit_for
from tui.core.state import Phase, Readiness

Mode = Literal["ready", "alive"]
EXIT_OK, EXIT_FAILED, EXIT_BAD_ARGS, EXIT_STALLED, EXIT_CONNECT, EXIT_NOT_YET = 0, 1, 2, 3, 4, 7


@dataclass(frozen=True)
class ProbeVerdict:
    code: int
    kind: str  # ready | serving | starting | not_answering | catching_up | stalled | failed | stopped |
    # cannot_connect | bad_log
    line: str


def probe_verdict(state: Readiness, mode: Mode, now: float, *, unread: int = 0) -> ProbeVerdict:
    """The exit for `state` at `now`. unread: bytes of the log this call had no time to read (a first call on a
    large log reads on over the next calls); until they are read only a failure or the link decides."""
    s = state
    reason = explain(s, now)[0]
    if s.phase is Phase.FAILED:
        if s.error is not None and s.error.stopped_by:
            return ProbeVerdict(EXIT_FAILED, "stopped", reason)
        if s.error is not None:
            return ProbeVerdict(EXIT_FAILED, "failed", f"failed ({s.error.kind}): {s.error.line.strip()}")
        return ProbeVerdict(EXIT_FAILED, "failed", f"failed: {reason}")
    if s.connection == "failed":
        return ProbeVerdict(EXIT_CONNECT, "cannot_connect", f"cannot connect: {s.connection_detail}")
    if s.log_file is not None and s.log_file.status == "directory":
        return ProbeVerdict(EXIT_BAD_ARGS, "bad_log", f"{log_file_line(s.log_file)}; pass the log file inside it")
    if unread > 0:
        line = f"reading the log: {unread / 2**20:.1f} MiB left to read (the next calls read on); so far {reason}"
        return ProbeVerdict(EXIT_OK if mode == "alive" else EXIT_NOT_YET, "catching_up", line)
    if s.stall is not None:
        return ProbeVerdict(EXIT_STALLED, "stalled", reason)
    if s.phase in (Phase.READY, Phase.SERVING):
        if mode == "ready" and s.health_probed is True and not s.health_ready:
            last = latest_health(s, "/health")
            said = health_text(last) if last is not None else "no answer yet"
            line = f"{s.phase.value}, but /health does not answer 200 now (last: {said})"
            return ProbeVerdict(EXIT_NOT_YET, "not_answering", line)
        line = reason if reason.startswith(("ready", "serving")) else f"{s.phase.value}: {reason}"
        return ProbeVerdict(EXIT_OK, s.phase.value, line)
    line = f"{s.phase.value}: {reason}"
    return ProbeVerdict(EXIT_OK if mode == "alive" else EXIT_NOT_YET, "starting", line)


def quiet_and_budget(state: Readiness, now: float) -> tuple[float | None, float | None]:
    """(seconds since the last progress, the phase's stall budget): the stall rule's own facts, for the probe's
    JSON (None where they do not apply)."""
    since = state.last_progress_at if state.last_progress_at is not None else state.first_seen_at
    budget = None if state.process_alive is False else limit_for(state)
    return (max(0.0, now - since) if since is not None else None), budget
