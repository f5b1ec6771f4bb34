"""The fleet board's words: each cell of a row (tui.core.fleet decides the facts behind them), and the same rows
as plain text for `fleet --once`. No Textual here: the command prints these words as the board shows them."""

from __future__ import annotations

from dataclasses import dataclass

from tui.core import fmt
from tui.core import srtlayout as srt
from tui.core.deployment import Combined, role_counts
from tui.core.eta import estimate, slow_phases, slow_words
from tui.core.exitcodes import EXIT_BAD_ARGS
from tui.core.explain import PROCESS_EXITED, latest_health
from tui.core.fleet import UP, FleetEntry, exit_code, gpus_held, in_phase_s
from tui.core.freshness import lost_words
from tui.core.remedy import remedy
from tui.core.state import Phase, Readiness
from tui.core.termtext import terminal_safe
from tui.core.wording import verdict_line
from tui.ui.labels import kind_words, phase_words, stopped_by_tool

COLUMNS: tuple[tuple[str, str], ...] = (
    ("name", "NAME"),
    ("where", "WHERE"),
    ("phase", "PHASE"),
    ("in_phase", "IN PHASE"),
    ("eta", "ETA"),
    ("health", "HEALTH"),
    ("gpus", "GPUS"),
    ("usual", "VS USUAL"),
    ("status", "STATUS"),
)
HEADERS = dict(COLUMNS)
LINE_CHARS = 70  # a failure's line in the STATUS cell (the server's own view has it whole)


@dataclass(frozen=True)
class RowState:
    """What a person must act on in a row, as the PHASE cell says it: `word` the cell's text, `bucket` what the
    summary counts it as, `style` its colour (a Rich style: no Textual here, the board applies it)."""

    word: str
    bucket: str
    style: str = ""


#: The summary's buckets, in the order it says them, each with its colour (the PHASE cell's, less the reverse).
BUCKETS: tuple[tuple[str, str], ...] = (
    ("ready", "green"),
    ("starting", ""),
    ("queued", "cyan"),
    ("stalled", "bold yellow"),
    ("failed", "bold red"),
    ("unreachable", "bold magenta"),
    ("stopped", "yellow"),
    ("bad log", "bold red"),
    ("nothing", "dim"),
)
_STALLED = "bold reverse yellow"
_FAILED = "bold reverse red"
_UNREACHABLE = "bold reverse magenta"


def row_state(entry: FleetEntry) -> RowState:
    """The one mapping from a row's state to its PHASE cell, its colour and its summary bucket (the board, its
    summary and `fleet --once` read it here): the states that need someone in capitals and their own colour
    (STALLED, FAILED with its cause, UNREACHABLE, STOPPED, QUEUED), the calm ones as the phase says them."""
    s = entry.state
    if entry.kind == "nothing":
        return RowState("nothing", "nothing", "dim")
    stop = stopped_by_tool(s)
    if stop is not None or (s.error is not None and s.error.stopped_by == "outside"):
        return RowState("STOPPED", "stopped", "bold yellow")  # a stop is no failure: someone meant it
    if s.phase is Phase.FAILED:
        cause = "exited" if s.error is not None and s.error.line == PROCESS_EXITED else None
        if cause is None and s.error is not None and s.error.kind != "other":
            cause = kind_words(s.error.kind)
        return RowState(f"FAILED ({cause})" if cause else "FAILED", "failed", _FAILED)
    if s.lost_at is not None:  # its host cannot be reached: its phase is not known now (tui.core.freshness)
        return RowState("UNREACHABLE", "unreachable", _UNREACHABLE)
    if s.phase in UP:
        return RowState(phase_words(s.phase), "ready", "bold green")
    if exit_code(entry) == EXIT_BAD_ARGS:
        return RowState("BAD LOG PATH", "bad log", _FAILED)
    if s.connection == "failed":
        return RowState("UNREACHABLE", "unreachable", _UNREACHABLE)
    if s.stall is not None:
        return RowState(f"STALLED in {phase_words(s.phase)}", "stalled", _STALLED)
    if s.phase.value == "queued":  # a Slurm job not yet running (its phase, where the state has one)
        return RowState("QUEUED", "queued", "bold cyan")
    if s.connection != "connected" and s.phase is Phase.STARTING and not s.launched:
        return RowState("connecting", "starting", "dim")  # nothing is known of the server before the first connection
    return RowState(phase_words(s.phase), "starting", "cyan")


def phase_cell(entry: FleetEntry) -> str:
    """The PHASE cell: the row's state, and for a PD deployment its workers ready of each role (`2/4P 1/1D`)."""
    word = row_state(entry).word
    dep = getattr(entry.state, "deployment", None)  # a deployment's combined state (tui.core.deployment.Combined)
    counts = role_counts(dep) if dep is not None else ()
    roles = " ".join(f"{ready}/{total}{role[0].upper()}" for role, ready, total in counts)
    return f"{word} {roles}" if roles else word


def eta_s(entry: FleetEntry, now: float) -> float | None:
    """Seconds to ready, when they can be known honestly (tui.core.eta)."""
    if entry.kind == "nothing" or entry.state.phase in UP:
        return None
    return estimate(entry.state, now).ready_in_s


def cells(entry: FleetEntry, now: float) -> dict[str, str]:
    """Every cell of the row, as words (made printable: names and lines come from hosts and logs)."""
    s = entry.state
    if entry.kind == "nothing":
        out = dict.fromkeys(HEADERS, "—")
        out.update(name=entry.name, where=entry.where, phase="nothing", status=entry.note)
    else:
        out = {
            "name": entry.name,
            "where": entry.where,
            "phase": phase_cell(entry),
            "in_phase": in_phase_cell(s, now),
            "eta": eta_cell(entry, now),
            "health": health_cell(s),
            "gpus": gpus_cell(s),
            "usual": usual_cell(s, now),
            "status": status_cell(s, now),
        }
    return {k: one_line(v) for k, v in out.items()}


def one_line(text: str) -> str:
    """A cell's text on one line, with nothing a terminal would obey (tui.core.termtext)."""
    return " ".join(terminal_safe(text).split())


def in_phase_cell(s: Readiness, now: float) -> str:
    """How long in this phase; once up, whole minutes ("<1m" in the first), so a ready row changes once a minute."""
    seconds = in_phase_s(s, now)
    if seconds is None or (s.connection != "connected" and not s.launched):
        return "—"
    if s.phase in UP:
        minutes = int(seconds // 60)
        if minutes == 0:
            return "<1m"
        return f"{minutes}m" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"
    return fmt.duration(seconds)


def eta_cell(entry: FleetEntry, now: float) -> str:
    s = entry.state
    if s.phase in UP or s.phase is Phase.FAILED:
        return "—"
    found = estimate(s, now)
    if found.ready_in_s is not None:
        return f"~{fmt.duration(found.ready_in_s)}"
    if found.silent_s is not None:
        return "?"  # the progress ETA was withdrawn: nothing moved for a while
    if found.phase_left_s is not None:
        return f"phase ~{fmt.duration(found.phase_left_s)}"
    return "—"


def health_cell(s: Readiness) -> str:
    if s.health_probed is False:
        return "off"
    last = latest_health(s, "/health")
    if last is None:
        return "—"
    if last.status is not None:
        return str(last.status)
    return last.outcome


def gpus_cell(s: Readiness) -> str:
    """The GPUs its own processes hold: "8× 14.4 GiB" when about even, else the count and the total."""
    held = gpus_held(s)
    if not held:
        return "—"
    sizes = [n for _, n in held]
    if len(held) == 1:
        return f"1× {fmt.gib_bytes(sizes[0])}"
    if max(sizes) - min(sizes) <= 0.02 * max(sizes):
        return f"{len(held)}× {fmt.gib_bytes(max(sizes))}"
    return f"{len(held)} GPUs {fmt.gib_bytes(sum(sizes))}"


def usual_cell(s: Readiness, now: float) -> str:
    """ "weights 2.1× slower than usual" while a phase runs late; once up, the phases that did; "as usual" when the
    history has launches of this key and nothing ran late; "" without history."""
    if s.phase in UP:
        slow = slow_phases(s)
        if slow:
            return ", ".join(slow_words(p, f, past=True) for p, f in slow)
    elif s.phase is not Phase.FAILED:
        found = estimate(s, now).slow
        if found is not None:
            return slow_words(*found)
    return "as usual" if s.past is not None and s.past.count >= 2 and s.phase is not Phase.FAILED else ""


def status_cell(s: Readiness, now: float) -> str:
    """The verdict and its reason's short form; an srtctl job's benchmark word after it where it disagrees with
    the servers' (the fact the fold made: Combined.benchmark_disagrees)."""
    cell = _verdict_cell(s, now)
    found = s.benchmark_disagrees if isinstance(s, Combined) else None
    return f"{srt.disagreement_short(found)} · {cell}" if found is not None else cell


def _verdict_cell(s: Readiness, now: float) -> str:
    stop = stopped_by_tool(s)
    if stop is not None:
        return f"stopped by sglang-tui ({stop.action})"
    if s.phase is Phase.FAILED:
        if s.error is not None and s.error.stopped_by:
            return verdict_line(s, now)
        if s.error is not None:
            line = " ".join(s.error.line.split())
            line = line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"
            fix = remedy(s)  # the remedy's short form first: what to do fits where the cell is cut
            who = f"{s.failed_member} " if isinstance(s, Combined) and s.failed_member else ""  # a deployment's
            return f"{who}failed ({kind_words(s.error.kind)}): " + (f"try {fix.short()} · " if fix else "") + line
        return verdict_line(s, now)
    if s.lost_at is not None or s.connection == "failed":
        return lost_words(s, now)  # "cannot connect: …; last seen ready 1m ago" (tui.core.freshness)
    if s.stall is not None:
        quiet = fmt.duration(max(0.0, now - s.stall.since))
        detail = f": {s.stall.detail}" if s.stall.detail else ""
        return f"stalled {quiet} (allows {fmt.duration(s.stall.limit_s)}){detail}"
    if s.connection in ("connecting", "reconnecting") and s.connection_detail:
        return f"{s.connection}: {s.connection_detail}"
    if s.connection == "connecting":
        return "connecting"
    reason = verdict_line(s, now)
    return reason.split(" · ")[0]


def haystack(entry: FleetEntry, row: dict[str, str]) -> str:
    """What `/` searches in a row: every cell, and the group."""
    return " ".join([*row.values(), entry.group])


def table_text(entries: list[FleetEntry], now: float) -> str:
    """The rows as a plain table, one line per server, the status last (it is the widest)."""
    rows = [cells(e, now) for e in entries]
    keys = [k for k, _ in COLUMNS]
    widths = {k: max([len(HEADERS[k]), *(len(r[k]) for r in rows)]) for k in keys}
    lines = []
    for row in [HEADERS, *rows]:
        parts = [row[k].ljust(widths[k]) if k != "status" else row[k] for k in keys]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)
