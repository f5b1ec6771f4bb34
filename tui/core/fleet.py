"""The fleet board's facts, pure: one entry per server (a single server, or a Slurm job's nodes as one), the exit
code each entry calls for, the worst of them, when an entry has said its first state, which GPUs its processes
hold, and the order and filter the board and `fleet --once` apply.

Exit codes from DESIGN.md's one table (0 ready, 1 failed, 2 bad arguments, 3 stalled, 4 cannot connect, 5 cannot
see, 6 nothing found, 7 timed out), each row's from its verdict (tui.core.verdict): `--once` waits for each row as
`wait` does (once_code), and a server still starting at `--timeout` is 7, as `wait` at its deadline. The worst of several is the lowest non-zero code (WORST_FIRST): a failure over a bad log path over a
stall over a host that cannot be reached over one whose processes cannot be seen over nothing found over not
ready yet; 0 only when every server is ready.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_CONNECT, EXIT_FAILED, EXIT_NOTHING, EXIT_STALLED
from tui.core.exitcodes import EXIT_CANNOT_SEE as EXIT_UNSEEN
from tui.core.exitcodes import EXIT_OK as EXIT_READY
from tui.core.exitcodes import EXIT_TIMEOUT as EXIT_NOT_YET
from tui.core.firstlook import log_looked
from tui.core.liveness import failure_settling
from tui.core.state import PHASE_ORDER, Phase, Readiness
from tui.core.verdict import decide

WORST_FIRST = (EXIT_FAILED, EXIT_BAD_ARGS, EXIT_STALLED, EXIT_CONNECT, EXIT_UNSEEN, EXIT_NOTHING, EXIT_NOT_YET)
UP = (Phase.READY, Phase.SERVING)

EntryKind = Literal["server", "job", "nothing"]


@dataclass(frozen=True)
class FleetEntry:
    """One row of the board: a server (kind "server"), a Slurm job's nodes as one server ("job"), or a target
    that named nothing to watch ("nothing": a host with no SGLang server, a `slurm:` with no job; `note` says
    what was found)."""

    name: str
    where: str  # the host (`gpu1`), or the job and its nodes, node 0 first (`slurm 4242: n1,n2`)
    state: Readiness
    kind: EntryKind = "server"
    group: str = ""
    note: str = ""  # kind "nothing": the one line that says why
    order: int = 0  # its place on the command line or in the inventory (the board's first order)
    parts: tuple[Readiness, ...] = ()  # kind "job": each node's own state, node 0 first (`state` is the whole's)


def exit_code(entry: FleetEntry) -> int:
    """The code this entry calls for now: its verdict's (tui.core.verdict.decide), 7 while it starts; a row whose
    host cannot be reached is 4 in any phase but failed (tui.core.freshness: nothing it says is known now)."""
    if entry.kind == "nothing":
        return EXIT_NOTHING
    s = entry.state
    if s.lost_at is not None and s.phase is not Phase.FAILED:
        return EXIT_CONNECT
    code = decide(s).code
    return EXIT_NOT_YET if code is None else code


NOTHING_GRACE_S = 3.0  # `--once`: nothing found over this long (a process watch's report and the next) is nothing


def once_code(entry: FleetEntry, now: float, missing_since: float | None) -> int | None:
    """`fleet --once` is `wait` per row: the row's code once its verdict is final, None while it is still waited
    for (until --timeout, then 7). A row that cannot be reached or names nothing is decided at once; any other
    after its first look (first_state_said); a failure once it has settled (its cause, the process watch's
    report: tui.core.liveness), nothing found (no log, nothing listening: missing_since, when that began) after
    NOTHING_GRACE_S."""
    code = exit_code(entry)
    if code in (EXIT_NOTHING, EXIT_CONNECT):
        return code
    if not first_state_said(entry):
        return None
    if code == EXIT_NOT_YET:
        found_nothing = missing_since is not None and now - missing_since >= NOTHING_GRACE_S
        return EXIT_NOTHING if found_nothing else None
    if code == EXIT_FAILED and failure_settling(entry.state, now):
        return None
    return code


def worst(codes: list[int]) -> int:
    """0 when every code is 0 (and there is at least one), else the worst by WORST_FIRST; none at all: 6."""
    if not codes:
        return EXIT_NOTHING
    bad = [c for c in codes if c != EXIT_READY]
    if not bad:
        return EXIT_READY
    return min(bad, key=lambda c: WORST_FIRST.index(c) if c in WORST_FIRST else len(WORST_FIRST))


def first_state_said(entry: FleetEntry) -> bool:
    """The entry has said enough to be shown by `--once`: nothing to watch, no connection, or (whatever its phase, so
    that every cell is filled) its log read once (or no log to read), its processes looked at once, /health answered
    once (a timeout is no answer; or none probed) and its GPUs read once (or the probe's error said); a Slurm job's,
    once each node's has. Before that, a row says only "connecting"."""
    if entry.kind == "nothing" or exit_code(entry) == EXIT_CONNECT:
        return True
    if entry.parts:  # a job: once every node has said its own
        return all(first_state_said(FleetEntry(entry.name, entry.where, part)) for part in entry.parts)
    s = entry.state
    log_seen = log_looked(s)  # the bytes of the first look all read: never a state from halfway through them
    procs_seen = not s.process_watched or s.process_checked_at is not None
    health = next((r for r in s.health if r.endpoint == "/health"), None)  # its own answer, not another endpoint's
    health_seen = not s.health_probed or (health is not None and health.outcome not in ("timeout", "error"))
    gpus_seen = s.gpus is not None  # a snapshot or the probe's error: it always says one
    return s.connection == "connected" and log_seen and procs_seen and health_seen and gpus_seen


def gpus_held(state: Readiness) -> tuple[tuple[int, int], ...]:
    """(GPU index, bytes) the server's own processes hold on each GPU: by PID when the probe saw the server's
    PIDs (a host's probe lists every server's processes), else by SGLang's process titles."""
    gpus = state.gpus.gpus if state.gpus is not None else ()
    ours = set(state.process_pids)
    by_pid = any(p.pid in ours for g in gpus for p in g.procs)
    held = []
    for gpu in gpus:
        mine = [p for p in gpu.procs if (p.pid in ours if by_pid else (p.name or "").startswith("sglang"))]
        total = sum(p.used_bytes or 0 for p in mine)
        if total:
            held.append((gpu.index, total))
    return tuple(held)


# ------------------------------------------------------------------------------------------- order and filter

SORT_COLUMNS = ("order", "name", "where", "phase", "in_phase", "eta", "gpus")
"""What `s` cycles through on the board: the order given, then each sortable column."""

_PHASE_RANK = {p: i for i, p in enumerate(PHASE_ORDER)}


def trouble_rank(entry: FleetEntry) -> int:
    """Smaller is worse: failed, stalled, no connection, nothing found, then starting, then up (the phase order)."""
    code = exit_code(entry)
    if code in (EXIT_FAILED, EXIT_BAD_ARGS, EXIT_STALLED, EXIT_CONNECT, EXIT_NOTHING):
        return WORST_FIRST.index(code)
    return len(WORST_FIRST) + _PHASE_RANK.get(entry.state.phase, 0)


def in_phase_s(state: Readiness, now: float) -> float | None:
    """Seconds in the current phase (the log's clock where the log said when it began), None before any."""
    since = state.phase_since
    if not since:
        return None
    return max(0.0, now - since)


def sort_key(column: str, entry: FleetEntry, now: float, eta_s: float | None) -> tuple[object, ...]:
    """The key of one entry for one column; ties keep the order given. A missing figure sorts last."""
    if column == "name":
        return (entry.name.lower(), entry.order)
    if column == "where":
        return (entry.where.lower(), entry.order)
    if column == "phase":
        return (trouble_rank(entry), entry.order)
    if column == "in_phase":
        seconds = in_phase_s(entry.state, now)
        return (seconds is None, -(seconds or 0.0), entry.order)  # the longest first
    if column == "eta":
        return (eta_s is None, eta_s or 0.0, entry.order)  # the soonest first
    if column == "gpus":
        return (-sum(n for _, n in gpus_held(entry.state)), entry.order)  # the most memory first
    return (entry.order,)


def matches(words: str, haystack: str) -> bool:
    """The board's `/` filter: every word typed is in the row's text (case-insensitive); `!word` excludes."""
    text = haystack.lower()
    for word in words.lower().split():
        if word.startswith("!") and len(word) > 1:
            if word[1:] in text:
                return False
        elif word not in text:
            return False
    return True
