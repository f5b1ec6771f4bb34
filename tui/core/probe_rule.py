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
log. Pure: the state, the mode and the clock in; the exit, its kind and one line out: the one place that maps the
verdict (tui.core.verdict) to a probe's exit; its line is the verdict's own (tui.core.wording), the header's words.
"""

from __future__ import annotations

from typing import Literal

from tui.core import exitcodes as ec
from tui.core.explain import health_text, latest_health
from tui.core.record import Record, record
from tui.core.stall import budget_for, quiet_since
from tui.core.state import Readiness
from tui.core.verdict import decide
from tui.core.wording import line

Mode = Literal["ready", "alive"]
EXIT_OK, EXIT_FAILED, EXIT_BAD_ARGS, EXIT_STALLED, EXIT_CONNECT = (
    ec.EXIT_OK, ec.EXIT_FAILED, ec.EXIT_BAD_ARGS, ec.EXIT_STALLED, ec.EXIT_CONNECT,
)  # fmt: skip
EXIT_NOT_YET = ec.EXIT_TIMEOUT  # not ready yet: a probe is a wait with no time left


@record
class ProbeVerdict(Record):
    code: int
    kind: str  # ready | serving | starting | not_answering | catching_up | stalled | failed | stopped |
    # cannot_connect | bad_log
    line: str


def probe_verdict(state: Readiness, mode: Mode, now: float, *, unread: int = 0) -> ProbeVerdict:
    """The exit for `state` at `now`: the verdict (tui.core.verdict.decide) and its line (tui.core.wording), mapped
    to a probe's mode. unread: bytes of the log this call had no time to read (a first call on a large log reads
    on over the next calls); until they are read only a failure, the link or a bad --log decides."""
    verdict = decide(state)
    said = line(verdict, state, now)
    if verdict.kind in ("failed", "stopped", "cannot_connect"):
        return ProbeVerdict(CODES[verdict.kind], verdict.kind, said)
    if verdict.kind == "bad_arguments":
        return ProbeVerdict(EXIT_BAD_ARGS, "bad_log", said)
    not_ready = EXIT_OK if mode == "alive" else EXIT_NOT_YET
    if unread > 0:
        return ProbeVerdict(
            not_ready,
            "catching_up",
            f"reading the log: {unread / 2**20:.1f} MiB left to read (the next calls read on); so far {said}",
        )
    if verdict.kind == "stalled":
        return ProbeVerdict(EXIT_STALLED, "stalled", said)
    if verdict.kind in ("ready", "serving"):
        if mode == "ready" and state.health_probed is True and not state.health_ready:
            last = latest_health(state, "/health")
            answered = health_text(last) if last is not None else "no answer yet"
            return ProbeVerdict(
                EXIT_NOT_YET, "not_answering", f"{verdict.kind}, but /health does not answer 200 now (last: {answered})"
            )
        return ProbeVerdict(EXIT_OK, verdict.kind, said)
    return ProbeVerdict(not_ready, "starting", said)


CODES = {"failed": EXIT_FAILED, "stopped": EXIT_FAILED, "cannot_connect": EXIT_CONNECT}


def quiet_and_budget(state: Readiness, now: float) -> tuple[float | None, float | None]:
    """(seconds since the last progress, the phase's stall budget): the stall rule's own facts, for the probe's
    JSON (None where they do not apply)."""
    since = quiet_since(state)  # the stall rule's own figures (tui.core.stall): never a second reckoning
    return (max(0.0, now - since) if since is not None else None), budget_for(state)
