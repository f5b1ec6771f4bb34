"""One `probe` call folded into the memo the last call left: the log's new bytes, then what the host and the
server answered now, then the clock. The same reducer and parser as every watcher, fed by a look instead of a
stream, so a probe's verdict is `wait`'s.

Where to read from (read_plan): the memo's offset while the log is the same file (LogMark.same_file), else from
0 with the LogReset a tail would say (rotated, truncated, appeared); a first read of a large log starts at its
last launch, as an attach does. Each call is a look at the file (a LogLook, as the log tail's): the bytes it
reads were written before it, so they are history on the log's own clock (tui.core.clocks, the one rule for
every watcher): their events happened at their log time, an untimed one no later than the file's mtime (moved
onto ours by the skew the look measured). A hang then counts from the log's last write even across calls a
period apart or a first call on an old log, and the stall verdict comes at the first call past the budget.

Pure: the looks are values (the host's answers), `now` is handed in.
"""

from __future__ import annotations

from dataclasses import replace

from tui.core.events import Event, LogActivity, LogFile, LogLook, LogReset, Tick
from tui.core.fold import Fold
from tui.core.logparse import LogParser
from tui.core.probe_memo import TAIL_BYTES, LogMark, ProbeMemo
from tui.core.record import Record, record
from tui.core.remedy_clues import ClueReader

WHOLE_BELOW = 2 * 1024 * 1024  # a log smaller than this is read whole on a first read (tui.sources.logtail's)


@record
class FileLook(Record):
    """What the log path is now (the look a tail takes before it reads): kind file | missing | directory |
    denied, the file's identity and size, its mtime (the host's epoch seconds), our clock minus the host's as
    the look measured it, the bytes just before the memo's offset when they were asked for (None: not asked, or
    unreadable), and the newest log time in the file's last bytes (tui.core.clocks.newest_log_time)."""

    kind: str
    dev: str = ""
    inode: str = ""
    size: int = 0
    mtime: float | None = None
    skew: float = 0.0
    symlink: str | None = None
    readable: bool = True
    tail: bytes | None = None
    last_t: float | None = None

    @property
    def readable_file(self) -> bool:
        return self.kind == "file" and self.readable


@record
class ReadPlan(Record):
    """Where this call reads the log from. start None: nothing to read (not a readable file); find_launch: a
    first read of a large log, whose last launch the caller finds first."""

    start: int | None
    resets: tuple[LogReset, ...] = ()
    fresh_parser: bool = False
    find_launch: bool = False


def read_plan(memo: ProbeMemo, look: FileLook, path: str) -> ReadPlan:
    mark, was = memo.mark, memo.state.log_file
    if not look.readable_file:
        missing = look.kind == "missing" and (was is None or was.status != "missing")
        return ReadPlan(None, (LogReset("missing", path),) if missing else (), fresh_parser=missing)
    if mark is None:
        if was is not None and was.status == "missing":
            return ReadPlan(0, (LogReset("appeared", path),), fresh_parser=True)
        return ReadPlan(0, find_launch=look.size >= WHOLE_BELOW, fresh_parser=True)
    if mark.same_file(look.dev, look.inode, look.size, look.tail):
        return ReadPlan(mark.offset)
    if (look.dev, look.inode) != (mark.dev, mark.inode):
        why = LogReset("rotated", f"{path}: new file (inode {look.inode})")
    elif look.size < mark.offset:
        why = LogReset("truncated", f"{path}: size {look.size} < offset {mark.offset}")
    else:
        why = LogReset("truncated", f"{path}: rewritten (the bytes before offset {mark.offset} changed)")
    return ReadPlan(0, (why,), fresh_parser=True)


def log_file_fact(look: FileLook, path: str, was: LogFile | None) -> LogFile | None:
    """The LogFile fact the look says, when it differs from the state's (a plain readable file says nothing
    until something else was said)."""
    if look.kind == "directory":
        status = "directory"
    elif look.kind == "denied" or (look.kind == "file" and not look.readable):
        status = "permission_denied"
    elif look.kind == "missing":
        status = "missing"
    else:
        status = "empty" if look.size == 0 else "ok"
    fact = LogFile(status, path, symlink=look.symlink)
    if fact == was or (was is None and status == "ok" and look.symlink is None):
        return None
    return fact


def log_look(look: FileLook, start: int, data: bytes) -> LogLook:
    """The call's look at the file as the log tail's: the bytes up to what it reads are history, the last of the
    file's written at its mtime; the file's newest log time beside that mtime gives the log's zone."""
    return LogLook(start + len(data), look.mtime, look.skew, look.last_t)


def history_clock(look: FileLook, after: float, now: float) -> float:
    """The reducer's clock while a call's bytes are folded: when the last of them was written (the file's mtime,
    plus the skew), no earlier than the last call's clock (they were not there then), no later than now. Their
    events keep their own times (tui.core.clocks); this is when the log held them, so a first call on a log last
    written an hour ago is not a launch begun moments ago (whose processes may not be found yet)."""
    if look.mtime is None:
        return now
    return min(now, max(after, look.mtime + look.skew))


def fold_call(
    memo: ProbeMemo,
    plan: ReadPlan,
    look: FileLook | None,
    path: str | None,
    start: int,
    data: bytes,
    answers: list[Event],
    now: float,
    *,
    fold: Fold | None = None,
) -> tuple[ProbeMemo, int]:
    """The memo after this call, and how many bytes of the log are still unread (read by the next calls).

    The log's resets and bytes first, on the log's clock; then `answers` (the processes, the HTTP probes) and a
    Tick at `now`, so the stall rule judges the silence at the call's time. fold: the steps after the reducer
    (the history's past), a plain Fold by default."""
    steps = fold if fold is not None else Fold()
    state = memo.state
    parser = LogParser() if plan.fresh_parser or memo.parser is None else memo.parser
    clues = ClueReader() if plan.fresh_parser or memo.clues is None else memo.clues
    log_events: list[Event] = []
    if look is not None and path is not None:
        fact = log_file_fact(look, path, state.log_file)
        if fact is not None:
            log_events.append(fact)
    log_events.extend(plan.resets)
    mark = memo.mark if not plan.fresh_parser else None
    if look is not None and look.readable_file and plan.start is not None:
        offset = start + len(data)
        history = log_look(look, start, data)
        log_events.append(history)
        log_events.append(LogActivity(offset, data))
        log_events.extend(parser.feed(data))
        said = clues.feed(data)  # what a remedy reads, after the events of the same bytes (as wait has it)
        if said is not None:
            log_events.append(said)
        log_events.append(replace(history, live=True))  # read: what waited on these bytes decides now
        before = mark.tail if mark is not None and start == mark.offset else b""
        mark = LogMark(look.dev, look.inode, offset, (before + data)[-TAIL_BYTES:])
    after = state.updated_at if state.first_seen_at is not None else float("-inf")
    at = history_clock(look, after, now) if look is not None and data else now
    if log_events:
        state = steps(state, log_events, at)
    state = steps(state, [*answers, Tick()], now)
    unread = max(0, look.size - mark.offset) if look is not None and mark is not None and look.readable_file else 0
    return replace(memo, state=state, parser=parser, clues=clues, mark=mark, saved_at=now), unread
