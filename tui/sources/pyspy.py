"""`py-spy dump` of every process of the server, run on the host through the Host (issue 13).

One round trip: find py-spy, then dump each pid in turn, each answer framed by `== PID` and `== rc N` lines
(`== rc N gone` when that process no longer exists once py-spy is done with it: it exited during the dump).
py-spy is looked for next to the server's own interpreter first (SGLang installs it as one of its
dependencies, in its own venv or conda env), then next to the remote Python, then on PATH. The server's
processes are the ones ProcessWatch finds (pidfile, port listener, log writer, then group, session and
descent); of those, the main process, the schedulers and the detokenizer are dumped (not compilers or other
helpers).
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
MISSING = "NO-PY-SPY"  # then the server's interpreter, when one was found
FOREIGN = "FOREIGN-PY-SPY"  # PATH UID: a py-spy beside the server's interpreter that is neither root's nor ours
DUMP_TIMEOUT_S = 30  # per process: a process in uninterruptible sleep must not hold the dump forever

# `cand DIR [server]`: DIR/py-spy, when executable and nothing was chosen yet. One found from the server's
# processes (their argv, exe and environment say where) is run only when root or this user owns it: the
# server's environment must not choose a program this user runs (root dumping another user's server).
# `envof PID VAR`: a variable of that process's environment. `interp PID`: where its interpreter lives:
# argv[0] (through its cwd, or its PATH when it has no slash; not a `sglang::` title), /proc/PID/exe,
# VIRTUAL_ENV, CONDA_PREFIX.
_FIND_FUNCS = r"""me=$(id -u); s=; foreign=; sp=
cand() { [ -n "$s" ] && return 0; c=$1/py-spy; [ -f "$c" ] && [ -x "$c" ] || return 0
  [ -z "$2" ] && { s=$c; return 0; }
  o=$(stat -L -c %u -- "$c" 2>/dev/null)
  if [ "$o" = 0 ] || [ "$o" = "$me" ]; then s=$c; elif [ -z "$foreign" ]; then foreign="$c $o"; fi; }
envof() { tr '\0' '\n' < "/proc/$1/environ" 2>/dev/null | sed -n "s/^$2=//p" | head -n 1; }
interp() { a0=$(tr '\0' '\n' < "/proc/$1/cmdline" 2>/dev/null | head -n 1)
  case $a0 in
    '' | sglang::*) a0= ;;
    /*) ;;
    */*) a0=$(readlink "/proc/$1/cwd" 2>/dev/null)/$a0 ;;
    *) f=; ifs=$IFS; IFS=:; set -f
       for d in $(envof "$1" PATH); do case $d in /*) [ -z "$f" ] && [ -f "$d/$a0" ] && f=$d/$a0 ;; esac; done
       set +f; IFS=$ifs; a0=$f ;;
  esac
  if [ -n "$a0" ]; then [ -n "$sp" ] || sp=$a0; cand "$(dirname -- "$a0")" server
    cand "$(dirname -- "$(readlink -f -- "$a0" 2>/dev/null || echo "$a0")")" server; fi
  e=$(readlink "/proc/$1/exe" 2>/dev/null) && { [ -n "$sp" ] || sp=$e; cand "$(dirname -- "$e")" server; }
  for v in VIRTUAL_ENV CONDA_PREFIX; do d=$(envof "$1" $v); [ -n "$d" ] && cand "$d/bin" server; done; }"""


def dump_command(remote_python: str, pids: list[int], server_pids: list[int] | None = None) -> str:
    """Find py-spy (next to the interpreter of SERVER_PIDS, default PIDS; then next to REMOTE_PYTHON; then on
    PATH) and dump each pid; py-spy's stderr joins its stdout."""
    py = q(remote_python)
    lines = [
        _FIND_FUNCS,
        f"for p in {' '.join(str(int(p)) for p in (pids if server_pids is None else server_pids))}; do",
        '  [ -n "$s" ] || interp "$p"; done',
        f"py=$(command -v {py} 2>/dev/null || echo {py})",
        'cand "$(dirname -- "$py")"; cand "$(dirname -- "$(readlink -f -- "$py" 2>/dev/null || echo "$py")")"',
        '[ -n "$s" ] || s=$(command -v py-spy 2>/dev/null)',
        f'[ -n "$s" ] || {{ echo "{MISSING} $sp"; [ -z "$foreign" ] || echo "{FOREIGN} $foreign"; exit 0; }}',
        't=; command -v timeout >/dev/null 2>&1 && t="timeout ' + str(DUMP_TIMEOUT_S) + '"',
        f"for p in {' '.join(str(int(p)) for p in pids)}; do",
        '  echo "== $p"; $t "$s" dump --pid "$p" 2>&1; r=$?; g=',
        '  { read -r l < "/proc/$p/stat"; } 2>/dev/null && set -- ${l##*) } && [ "$1" != Z ] && [ "$1" != X ] || g=" gone"',
        '  echo "== rc $r$g"',
        "done",
    ]
    return "\n".join(lines)


@dataclass
class DumpResult:
    stacks: list[ProcessStack] = field(default_factory=list)
    grouping: Grouping | None = None
    raw: str = ""  # every process's py-spy output, framed, for the saved file
    error: str = ""  # one line when nothing could be dumped (py-spy missing, ptrace refused, no server)
    found: str = ""  # nothing to dump: "nothing" (no server process) | "cannot_see" (another uid's); "" otherwise


SETTLE_GAP_S = 0.5  # between the samples that confirm an odd rank
SETTLE_SAMPLES = 3  # in all, when the first shows an odd rank: a majority outvotes a side step


async def dump(host: Host, watch: ProcessWatch, *, remote_python: str, where: str) -> DumpResult:
    """Dump the server's processes; `where` names the host in messages. When the ranks disagree, the ranks are
    dumped twice more, and only a rank that stayed in its odd place is named odd (stacks.settle)."""
    main, procs = await watch.server_processes()
    if not procs:
        unseen = watch.cannot_see()
        if unseen is not None:  # another uid's server: "no server" would be a lie
            return DumpResult(error=unseen.detail, found="cannot_see")
        target = f"port {watch.port}" + (f" or log {watch.log_path}" if watch.log_path else "")
        return DumpResult(error=f"no server process found on {where} ({target})", found="nothing")
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
    pids = sorted(chosen)
    server = ([main] if main is not None else []) + [p for p in pids if p != main]  # main's argv names its python
    result = await host.run(dump_command(remote_python, pids, server), timeout=DUMP_TIMEOUT_S * len(chosen) + 30)
    text = result.stdout.decode("utf-8", "replace")
    if text.startswith(MISSING):
        return DumpResult(error=_missing(text, where, remote_python))
    sections = {pid: (body, gone) for pid, body, gone in _sections(text)}
    # py-spy can catch a main thread between two frames and print none (seen on an H200 with a process in
    # torch.cuda.synchronize): dump those once more, and keep the answer that has frames.
    empty = [
        pid for pid, (body, gone) in sections.items() if not gone and stacks.failure(body) is None and _frameless(body)
    ]
    if empty:
        again = await host.run(dump_command(remote_python, empty, server), timeout=DUMP_TIMEOUT_S * len(empty) + 30)
        retry = again.stdout.decode("utf-8", "replace")
        for pid, body, gone in _sections(retry):
            if stacks.failure(body) is None and not _frameless(body):
                sections[pid] = (body, gone)
        text += "\n# dumped again (no Python frame the first time): " + " ".join(map(str, empty)) + "\n" + retry
    out = DumpResult(raw=text)
    refused: list[str] = []
    for pid, (body, gone) in sections.items():
        name = stacks.label(pid, chosen.get(pid, ""), main)
        parsed = stacks.parse_pyspy(body)
        kind = stacks.failure(body)
        if kind is None and parsed and not (gone and not parsed[0].frames):
            out.stacks.append(stacks.ProcessStack(pid, name, parsed[0].cmdline, parsed[0].threads, exited=gone))
            continue
        first = next(
            (ln.strip() for ln in body.splitlines() if ln.strip() and not ln.startswith("Stack backtrace")), ""
        )
        error = "exited during the dump" if gone else first or "py-spy printed nothing"
        out.stacks.append(stacks.ProcessStack(pid, name, chosen.get(pid, ""), error=error, exited=gone))
        if kind == "ptrace" and not gone:
            refused.append(f"{name} (pid {pid})")
    out.stacks.sort(key=lambda s: (not s.name.startswith(("TP", "DP", "PP")), sort_key(s.name), s.name))
    if refused and not any(not s.error for s in out.stacks):
        who = refused[0] if len(refused) == 1 else f"{len(refused)} processes ({', '.join(refused[:3])}…)"
        out.error = stacks.ptrace_line(who, where)
    elif refused:
        out.error = stacks.ptrace_line(", ".join(refused), where)
    elif out.stacks and all(s.exited for s in out.stacks if s.error) and not any(not s.error for s in out.stacks):
        out.error = stacks.all_exited_line([s.name for s in out.stacks], where)
    elif not any(not s.error for s in out.stacks):
        out.error = f"py-spy could not dump the server on {where}: " + (
            out.stacks[0].error if out.stacks else "no output"
        )
    out.grouping = stacks.group(out.stacks)
    return out


def _missing(text: str, where: str, remote_python: str) -> str:
    """The one line for NO-PY-SPY: where it looked (the server's interpreter named), and a py-spy it would not run."""
    first, *rest = text.splitlines()
    server_python = first[len(MISSING) :].strip()
    foreign = next((line.split() for line in rest if line.startswith(FOREIGN + " ")), [])
    unowned = (foreign[1], foreign[2]) if len(foreign) == 3 else None
    return stacks.missing_line(where, remote_python, server_python or None, unowned)


def _frameless(body: str) -> bool:
    parsed = stacks.parse_pyspy(body)
    return bool(parsed) and not parsed[0].frames


def _sections(text: str) -> list[tuple[int, str, bool]]:
    """(pid, py-spy output, gone since) per `== PID` … `== rc N [gone]` frame."""
    found: list[tuple[int, str, bool]] = []
    pid: int | None = None
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith("== rc ") and pid is not None:
            found.append((pid, "\n".join(body), line.split()[-1] == "gone"))
            pid, body = None, []
        elif line.startswith("== ") and line[3:].strip().isdigit():
            pid, body = int(line[3:].strip()), []
        elif pid is not None:
            body.append(line)
    return found
