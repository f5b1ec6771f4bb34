"""`py-spy dump` of every process of the server, run on the host through the Host (issue 13).

One round trip: find py-spy next to the remote Python, else on PATH, then dump each pid in turn, each
answer framed by `== PID` and `== rc N` lines. The server's processes are the ones ProcessWatch finds
(pidfile, port listener, log writer, then group, session, run marker and descent); of those, the main
process, the schedulers and the detokenizer are dumped (not compilers or other helpers).
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass, field

from tui.core import stacks
from tui.core.ranklabels import is_rank, sort_key
from tui.core.stacks import Grouping, ProcessStack
from tui.sources.host import Host
from tui.sources.procwatch import ProcessWatch

q = shlex.quote
MISSING = "NO-PY-SPY"
DUMP_TIMEOUT_S = 30  # per process: a process in uninterruptible sleep must not hold the dump forever


def dump_command(remote_python: str, pids: list[int]) -> str:
    """Find py-spy (next to REMOTE_PYTHON, else on PATH) and dump each pid; py-spy's stderr joins its stdout."""
    py = q(remote_python)
    lines = [
        f"py=$(command -v {py} 2>/dev/null || echo {py}); s=",
        'for c in "$(dirname -- "$py")/py-spy" "$(dirname -- "$(readlink -f -- "$py" 2>/dev/null || echo "$py")")/py-spy"; do',
        '  [ -z "$s" ] && [ -x "$c" ] && s=$c; done',
        '[ -n "$s" ] || s=$(command -v py-spy 2>/dev/null)',
        f'[ -n "$s" ] || {{ echo {MISSING}; exit 0; }}',
        't=; command -v timeout >/dev/null 2>&1 && t="timeout ' + str(DUMP_TIMEOUT_S) + '"',
        f"for p in {' '.join(str(int(p)) for p in pids)}; do",
        '  echo "== $p"; $t "$s" dump --pid "$p" 2>&1; echo "== rc $?"',
        "done",
    ]
    return "\n".join(lines)


@dataclass
class DumpResult:
    stacks: list[ProcessStack] = field(default_factory=list)
    grouping: Grouping | None = None
    raw: str = ""  # every process's py-spy output, framed, for the saved file
    error: str = ""  # one line when nothing could be dumped (py-spy missing, ptrace refused, no server)


SETTLE_GAP_S = 0.5  # between the samples that confirm an odd rank
SETTLE_SAMPLES = 3  # in all, when the first shows an odd rank: a majority outvotes a side step


async def dump(host: Host, watch: ProcessWatch, *, remote_python: str, where: str) -> DumpResult:
    """Dump the server's processes; `where` names the host in messages. When the ranks disagree, the ranks are
    dumped twice more, and only a rank that stayed in its odd place is named odd (stacks.settle)."""
    main, procs = await watch.server_processes()
    if not procs:
        target = f"port {watch.port}" + (f" or log {watch.log_path}" if watch.log_path else "")
        return DumpResult(error=f"no server process found on {where} ({target})")
    chosen = {pid: title for pid, title in procs.items() if pid == main or "sglang::" in title}
    out = await _sample(host, remote_python, chosen, main, where)
    if out.error or out.grouping is None or not out.grouping.odd:
        return out
    ranks = {s.pid: chosen.get(s.pid, "") for s in out.stacks if is_rank(s.name) and not s.error}
    samples = [[s for s in out.stacks if s.pid in ranks]]
    for _ in range(SETTLE_SAMPLES - 1):
        await asyncio.sleep(SETTLE_GAP_S)
        again = await _sample(host, remote_python, ranks, main, where)
        samples.append([s for s in again.stacks if s.pid in ranks])
        out.raw += "\n# sampled again, to confirm the odd ranks\n" + again.raw
    settled, steady = stacks.settle(samples)
    by_pid = {s.pid: s for s in settled}
    out.stacks = [by_pid.get(s.pid, s) for s in out.stacks]
    out.grouping = stacks.group(out.stacks, steady)
    return out


async def _sample(host: Host, remote_python: str, chosen: dict[int, str], main: int | None, where: str) -> DumpResult:
    """One py-spy dump of each of `chosen` (pid: title), in one round trip."""
    result = await host.run(dump_command(remote_python, sorted(chosen)), timeout=DUMP_TIMEOUT_S * len(chosen) + 30)
    text = result.stdout.decode("utf-8", "replace")
    if text.strip() == MISSING:
        return DumpResult(error=stacks.missing_line(where, remote_python))
    sections = dict(_sections(text))
    # py-spy can catch a main thread between two frames and print none (seen on an H200 with a process in
    # torch.cuda.synchronize): dump those once more, and keep the answer that has frames.
    empty = [pid for pid, body in sections.items() if stacks.failure(body) is None and _frameless(body)]
    if empty:
        again = await host.run(dump_command(remote_python, empty), timeout=DUMP_TIMEOUT_S * len(empty) + 30)
        retry = again.stdout.decode("utf-8", "replace")
        for pid, body in _sections(retry):
            if stacks.failure(body) is None and not _frameless(body):
                sections[pid] = body
        text += "\n# dumped again (no Python frame the first time): " + " ".join(map(str, empty)) + "\n" + retry
    out = DumpResult(raw=text)
    refused: list[str] = []
    for pid, body in sections.items():
        name = stacks.label(pid, chosen.get(pid, ""), main)
        parsed = stacks.parse_pyspy(body)
        kind = stacks.failure(body)
        if kind is None and parsed:
            out.stacks.append(stacks.ProcessStack(pid, name, parsed[0].cmdline, parsed[0].threads))
            continue
        first = next(
            (ln.strip() for ln in body.splitlines() if ln.strip() and not ln.startswith("Stack backtrace")), ""
        )
        out.stacks.append(stacks.ProcessStack(pid, name, chosen.get(pid, ""), error=first or "py-spy printed nothing"))
        if kind == "ptrace":
            refused.append(f"{name} (pid {pid})")
    out.stacks.sort(key=lambda s: (not s.name.startswith(("TP", "DP", "PP")), sort_key(s.name), s.name))
    if refused and not any(not s.error for s in out.stacks):
        who = refused[0] if len(refused) == 1 else f"{len(refused)} processes ({', '.join(refused[:3])}…)"
        out.error = stacks.ptrace_line(who, where)
    elif refused:
        out.error = stacks.ptrace_line(", ".join(refused), where)
    elif not any(not s.error for s in out.stacks):
        out.error = f"py-spy could not dump the server on {where}: " + (
            out.stacks[0].error if out.stacks else "no output"
        )
    out.grouping = stacks.group(out.stacks)
    return out


def _frameless(body: str) -> bool:
    parsed = stacks.parse_pyspy(body)
    return bool(parsed) and not parsed[0].frames


def _sections(text: str) -> list[tuple[int, str]]:
    """(pid, py-spy output) per `== PID` … `== rc N` frame."""
    found: list[tuple[int, str]] = []
    pid: int | None = None
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith("== rc ") and pid is not None:
            found.append((pid, "\n".join(body)))
            pid, body = None, []
        elif line.startswith("== ") and line[3:].strip().isdigit():
            pid, body = int(line[3:].strip()), []
        elif pid is not None:
            body.append(line)
    return found
