"""The verdict as data: what the readiness model says of a server (or of a deployment's combined state), the
facts that decide it, and its exit code from the one table (tui/core/exitcodes.py).

`decide(state)` is the one pure function every view and command asks: the header, `wait`, the JSON report, the
notifications, the TUI's hooks. Its words come from one place too (tui/core/wording.py): nothing here is text
for people. A command that ends without a state's verdict (timed out, nothing found, cannot see, bad
arguments) builds one with `ended`.
"""

from __future__ import annotations

from typing import Literal

from tui.core import exitcodes as ec
from tui.core.events import ControlResult
from tui.core.names import failed_phase
from tui.core.record import Record, record
from tui.core.state import ErrorInfo, Phase, Readiness, StallInfo
from tui.core.vocab import ControlAction, ErrorKind, StoppedBy

VerdictKind = Literal[
    "ready", "serving", "starting", "stalled", "failed", "stopped",
    "cannot_connect", "cannot_see", "nothing_found", "timed_out", "bad_arguments",
]  # fmt: skip

#: The exit code of each kind; `starting` has none (not a verdict to end on yet).
CODES: dict[VerdictKind, int] = {
    "ready": ec.EXIT_OK,
    "serving": ec.EXIT_OK,
    "failed": ec.EXIT_FAILED,
    "stopped": ec.EXIT_FAILED,
    "bad_arguments": ec.EXIT_BAD_ARGS,
    "stalled": ec.EXIT_STALLED,
    "cannot_connect": ec.EXIT_CONNECT,
    "cannot_see": ec.EXIT_CANNOT_SEE,
    "nothing_found": ec.EXIT_NOTHING,
    "timed_out": ec.EXIT_TIMEOUT,
}
#: SGLANG_TUI_VERDICT for --on-ready / --on-fail, by exit code (the words hooks already read keep theirs).
HOOK_WORDS: dict[int, str] = {
    ec.EXIT_OK: "ready",
    ec.EXIT_FAILED: "failed",
    ec.EXIT_BAD_ARGS: "bad_arguments",
    ec.EXIT_STALLED: "stalled",
    ec.EXIT_CONNECT: "connect",
    ec.EXIT_CANNOT_SEE: "cannot_see",
    ec.EXIT_NOTHING: "nothing_found",
    ec.EXIT_TIMEOUT: "timeout",
}
READY_PHASES = (Phase.READY, Phase.SERVING)


@record
class Verdict(Record):
    """One verdict and the facts that decide it.

    phase: starting and stalled, the phase it is in; failed and stopped, the phase it was in when it ended (None
    when no span before the failure is known); ready and serving, that phase. error: failed and stopped, the
    state's ErrorInfo (its kind, its line, who stopped it). action: stopped by sglang-tui, what it did.
    stall: stalled, the StallInfo. detail: cannot_connect, the link's last word; the kinds a command ends with,
    what it found (a path, a uid's line)."""

    kind: VerdictKind
    phase: Phase | None = None
    error: ErrorInfo | None = None
    action: ControlAction | None = None
    stall: StallInfo | None = None
    detail: str = ""
    after_s: float | None = None  # timed_out: the --timeout spent
    within: Verdict | None = None  # timed_out: the state's own verdict when the time ran out

    @property
    def code(self) -> int | None:
        """The exit code (tui/core/exitcodes.py); None while it is still starting."""
        return CODES.get(self.kind)

    @property
    def final(self) -> bool:
        return self.code is not None

    @property
    def error_kind(self) -> ErrorKind | None:
        return self.error.kind if self.error is not None else None

    @property
    def stopped_by(self) -> StoppedBy:
        return self.error.stopped_by if self.error is not None else ""


def decide(state: Readiness) -> Verdict:
    """The verdict of a state: failed or stopped (who, which action), cannot connect (the link gave up, or a
    ready server's host is lost: tui.core.freshness), ready/serving, stalled, bad arguments (a directory as the log: it never becomes one), else starting in its phase."""
    phase = state.phase
    if phase is Phase.FAILED:
        error = state.error
        where = failed_phase(state)
        if error is not None and error.stopped_by:
            action = stop_action(state) if error.stopped_by == "sglang-tui" else None
            return Verdict("stopped", where, error, action)
        return Verdict("failed", where, error)
    if state.connection == "failed" or (phase in READY_PHASES and state.lost_at is not None):
        # freshness (tui.core.freshness): what a look that cannot reach the host would say is not known, so a
        # lost host is never ready; a startup keeps its verdict through a reconnect (the wait rides it out)
        return Verdict("cannot_connect", phase, detail=state.connection_detail)
    if phase in READY_PHASES:
        return Verdict("serving" if phase is Phase.SERVING else "ready", phase)
    if state.stall is not None:
        return Verdict("stalled", phase, stall=state.stall)
    if state.log_file is not None and state.log_file.status == "directory":
        return Verdict("bad_arguments", phase, detail=state.log_file.path)
    return Verdict("starting", phase)


def stop_action(state: Readiness) -> ControlAction:
    """What sglang-tui did to stop it: the fact the reducer wrote (ErrorInfo.action), else the last action."""
    error = state.error
    if error is not None and error.action is not None:
        return error.action
    c = state.last_control
    return c.action if c is not None and c.action in STOP_ACTIONS else "stop"


STOP_ACTIONS = ("terminate", "kill", "stop")


def stop_result(state: Readiness) -> ControlResult | None:
    """The stop by sglang-tui that ended this launch (what was done, what is left), or None when the server
    failed or exited by itself, or a signal from outside stopped it."""
    verdict = decide(state)
    if verdict.kind != "stopped" or verdict.stopped_by != "sglang-tui":
        return None
    c = state.last_control
    if c is not None and c.action in STOP_ACTIONS:
        return c
    return ControlResult(verdict.action or "stop", ok=True)


def ended(
    kind: VerdictKind, state: Readiness | None = None, *, detail: str = "", after_s: float | None = None
) -> Verdict:
    """A verdict a command ends with rather than a state's: timed out (after_s, with the state's own verdict
    when there is one), nothing found, cannot see, cannot connect, bad arguments."""
    within = decide(state) if state is not None else None
    return Verdict(kind, state.phase if state is not None else None, detail=detail, after_s=after_s, within=within)
