"""Where every rank is stuck (issue 13): py-spy's text dumps parsed, ranks grouped by the shape of their stacks,
the odd ones out named ("TP3 is in all_reduce; TP0–2, TP4–7 are in barrier"), and py-spy's own failures
classified into one line that says what to install or allow. Pure: text in, values out.

py-spy prints, per process, `Process PID: CMDLINE`, `Python vX.Y.Z (PATH)`, then per thread
`Thread TID (idle|active|…): "NAME"` followed by its frames, innermost first, as `    func (file:line)`.
SGLang's watchdog prints the same text after `Pyspy dump for PID …` lines in its log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tui.core.lazyre import lazy
from tui.core.ranklabels import is_rank, rank_of, ranks_span, sort_key
from tui.core.record import Record, record
from tui.core.termtext import terminal_safe

_PROCESS = lazy(r"^Process (\d+): ?(.*)$", re.M)
_THREAD = lazy(r'^Thread (?:0x)?([0-9A-Fa-f]+) \(([^)]*)\)(?:: "(.*)")?')
_FRAME = lazy(r"^\s+(\S.*?) \((.*?)(?::(\d+))?\)\s*$")
_NOT_PERMITTED = ("permission denied", "operation not permitted", "os error 1)", "os error 13)", "ptrace")


@record
class Frame(Record):
    func: str
    file: str = ""
    line: int | None = None

    def text(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{self.func} ({where})" if where else self.func


@record
class Thread(Record):
    tid: str
    name: str = ""
    status: str = ""  # py-spy's "idle", "active", "gil", …
    frames: tuple[Frame, ...] = ()  # innermost first


@record
class ProcessStack(Record):
    pid: int
    name: str = ""  # "TP3", "main", "detokenizer", …
    cmdline: str = ""
    threads: tuple[Thread, ...] = ()
    error: str = ""  # py-spy's failure, when it could not dump this process
    exited: bool = False  # gone once py-spy was done with it: it exited during the dump

    @property
    def main(self) -> Thread | None:
        """The main thread (tid == pid, else the one named MainThread, else the first)."""
        for t in self.threads:
            if t.tid == str(self.pid):
                return t
        return next((t for t in self.threads if t.name == "MainThread"), self.threads[0] if self.threads else None)

    @property
    def frames(self) -> tuple[Frame, ...]:
        main = self.main
        return main.frames if main is not None else ()


@record
class Grouping(Record):
    groups: tuple[tuple[str, ...], ...]  # largest first
    odd: tuple[str, ...]  # the ranks outside the one largest group (none when no group is the largest)
    summary: str
    exited: tuple[str, ...] = ()  # the processes (ranks first) that exited during the dump: in no group


@dataclass
class _Builder:
    pid: int
    cmdline: str
    threads: list[Thread] = field(default_factory=list)


def parse_pyspy(text: str) -> list[ProcessStack]:
    """Every process dump in `text` (py-spy's output, or several concatenated)."""
    out: list[ProcessStack] = []
    cur: _Builder | None = None
    thread: tuple[str, str, str] | None = None
    frames: list[Frame] = []

    def close_thread() -> None:
        nonlocal thread, frames
        if cur is not None and thread is not None:
            cur.threads.append(Thread(thread[0], thread[1], thread[2], tuple(frames)))
        thread, frames = None, []

    def close_process() -> None:
        close_thread()
        if cur is not None:
            out.append(ProcessStack(cur.pid, cmdline=cur.cmdline, threads=tuple(cur.threads)))

    for raw in text.splitlines():
        line = raw.rstrip("\r")
        m = _PROCESS.match(line.strip())
        if m:
            close_process()
            cur = _Builder(int(m.group(1)), m.group(2).strip())
            continue
        m = _THREAD.match(line.strip())
        if m and cur is not None:
            close_thread()
            thread = (m.group(1), m.group(3) or "", m.group(2))
            continue
        m = _FRAME.match(line)
        if m and thread is not None:
            frames.append(Frame(m.group(1), m.group(2), int(m.group(3)) if m.group(3) else None))
    close_process()
    return out


def label(pid: int, title: str, main_pid: int | None) -> str:
    """The name a process goes by in a dump: its rank, "detokenizer", "main", or "pid N"."""
    rank = rank_of(title)
    if rank is not None:
        return rank
    if "detokenizer" in title:
        return "detokenizer"
    if pid == main_pid:
        return "main"
    word = title.split()[0] if title.split() else ""
    return word.split("::")[-1] if "::" in word else f"pid {pid}"


def _shape(stack: ProcessStack) -> tuple[tuple[str, str], ...]:
    return tuple((f.func, f.file) for f in stack.frames)


def settle(samples: list[list[ProcessStack]]) -> tuple[list[ProcessStack], frozenset[str]]:
    """Several dumps of the same processes, taken apart in time, as one: each process by the stack shape it showed
    most often (a tie goes to the latest), and the names of those whose shape never changed. A healthy rank caught
    once in a side step (writing a file, a lock) must not be named as the odd one; a hung rank stays put."""
    latest = samples[-1]
    steady: set[str] = set()
    chosen: list[ProcessStack] = []
    for stack in latest:
        seen = [s for sample in samples for s in sample if s.name == stack.name and not s.error]
        if stack.error or not seen:
            chosen.append(stack)
            continue
        shapes = [_shape(s) for s in seen]
        best = max(reversed(range(len(seen))), key=lambda i: shapes.count(shapes[i]))
        chosen.append(seen[best])
        if len(seen) == len(samples) and len(set(shapes)) == 1:
            steady.add(stack.name)
    return chosen, frozenset(steady)


def group(stacks: list[ProcessStack], steady: frozenset[str] | None = None) -> Grouping:
    """Group the scheduler ranks by the shape of their main thread's stack; name the odd ones out (of `steady`
    only, when given: a rank that moved between samples is not stuck). A process that exited during the dump
    is in no group: the summary names it first, so a dying server never reads as ranks all in one place."""
    exited = tuple(s.name for s in stacks if s.exited)
    ranks = [s for s in stacks if is_rank(s.name) and not s.error and not s.exited]
    shapes: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for s in ranks:
        shapes.setdefault(_shape(s), []).append(s.name)
    groups = sorted((tuple(names) for names in shapes.values()), key=lambda g: (-len(g), sort_key(g[0])))
    odd: tuple[str, ...] = ()
    if len(groups) > 1 and len(groups[0]) > len(groups[1]):
        odd = tuple(sorted((n for g in groups[1:] for n in g if steady is None or n in steady), key=sort_key))
    by_name = {s.name: s for s in ranks}
    parts = []
    for g in sorted(groups, key=lambda g: (g[0] not in odd, sort_key(g[0]))) if odd else groups:
        where = _innermost(by_name[g[0]])
        verb = "is" if len(g) == 1 else "are"
        parts.append(f"{ranks_span(g)} {verb} in {where}")
    if not groups:
        summary = "no scheduler rank could be dumped"
    elif len(groups) == 1 and not exited:
        summary = f"all {len(groups[0])} ranks are in the same place: {_innermost(by_name[groups[0][0]])}"
    else:
        summary = "; ".join(parts)
    if exited:
        summary = f"{ranks_span(exited)} exited during the dump; {summary}"
    return Grouping(tuple(groups), odd, summary, exited)


def _innermost(stack: ProcessStack) -> str:
    frames = stack.frames
    if not frames:
        return "no Python frame"
    f = frames[0]
    text = f.func.rsplit(".", 1)[-1] + (f" ({f.file.rsplit('/', 1)[-1]}:{f.line})" if f.file and f.line else "")
    return terminal_safe(text)  # a terminal never gets a raw escape


def to_json(stacks: list[ProcessStack], grouping: Grouping) -> dict[str, object]:
    """The `dump --json` contract: {"ranks": {"TP0": {"pid": …, "frames": […]}, …}, "groups": […], "odd": […]}."""
    return {
        "ranks": {s.name: {"pid": s.pid, "frames": [f.text() for f in s.frames]} for s in stacks},
        "groups": [list(g) for g in grouping.groups],
        "odd": list(grouping.odd),
        "exited": list(grouping.exited),
    }


def failure(output: str) -> str | None:
    """What kind of py-spy failure `output` shows: "ptrace" (not permitted), "gone", "other"; None if it dumped."""
    low = output.lower()
    if _PROCESS.search(output) and "thread" in low and "error:" not in low:
        return None
    if any(word in low for word in _NOT_PERMITTED):
        return "ptrace"
    if "no such process" in low or "check that the process is running" in low and "permission" not in low:
        return "gone"
    return "other"


def ptrace_line(who: str, host: str) -> str:
    return (
        f"py-spy was refused ptrace on {who} on {host}: run it as the server's user or root, or allow ptrace "
        "(containers: --cap-add SYS_PTRACE; Kubernetes: securityContext.capabilities.add: [SYS_PTRACE]; "
        "Yama: sysctl kernel.yama.ptrace_scope=0)"
    )


def missing_line(
    host: str, python: str, server_python: str | None = None, unowned: tuple[str, str] | None = None
) -> str:
    """py-spy found nowhere: where it looked (next to the server's own interpreter first, when one was found),
    a py-spy it found but would not run (owned by another user), and where to install it."""
    beside = f"next to the server's {server_python}, next to {python}" if server_python else f"next to {python}"
    skipped = (
        f"; not running {unowned[0]}: it belongs to uid {unowned[1]}, neither root nor this user" if unowned else ""
    )
    return (
        f"py-spy is not installed on {host} (looked {beside} and on PATH{skipped}): "
        f"install it there with `{server_python or python} -m pip install py-spy`"
    )


def all_exited_line(names: list[str], host: str) -> str:
    return (
        f"every process dumped on {host} ({ranks_span(names)}) exited during the dump: the server went down "
        "(its log says why)"
    )
