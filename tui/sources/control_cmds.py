"""The sh commands that find, launch and signal the server, built in one place, and pure parsers of their output.

Every value put into a command is quoted with `shlex.quote`; the commands need only POSIX sh, procps-free
/proc reads, coreutils, awk and util-linux's setsid. They find the server's processes by process group,
session and descent, never by name; the run marker (`SGLANG_TUI_RUN=ID` in /proc/PID/environ) tells our
launcher's pidfile from a reused pid.
"""

from __future__ import annotations

import shlex
from dataclasses import field

from tui.core.events import CompilerProc, HostActivity, ProcCounters
from tui.core.forwarders import forwarder
from tui.core.record import Record, record

MARKER_VAR = "SGLANG_TUI_RUN"
q = shlex.quote


def new_run_id() -> str:
    """A fresh run marker: fixed length, so one marker is never a prefix of another in /proc/PID/environ."""
    import secrets  # only a launch needs one: a probe loads this module for its scans (issue 32)

    return secrets.token_hex(8)


def pidfile_for(log_path: str) -> str:
    return f"{log_path}.sglang-tui.pid"


# The launcher: $$ of this sh is PID = PGID = SID (setsid need not fork: the caller's `&` child leads no
# group); it records itself, enters DIR, then becomes CMD with the run marker in its environment. The log
# and the pidfile are opened before the cd, so they resolve where every other command (the tail) looks.
LAUNCHER = 'echo $$ > "$1" && cd "$4" && exec env ' + MARKER_VAR + '="$2" PYTHONUNBUFFERED=1 sh -c "$3"'


def launch_command(command: str, *, log_path: str, run_id: str, cwd: str | None = None) -> str:
    """`setsid sh -c LAUNCHER sglang-tui PIDFILE ID CMD DIR > LOG 2>&1 < /dev/null &` (every word quoted)."""
    pidfile = pidfile_for(log_path)
    args = " ".join(q(a) for a in ("sglang-tui", pidfile, run_id, command, cwd or "."))
    return f"rm -f -- {q(pidfile)}; setsid sh -c {q(LAUNCHER)} {args} > {q(log_path)} 2>&1 < /dev/null &"


def read_pidfile_command(log_path: str, wait_s: float = 5.0) -> str:
    """Print the launcher's pid once it has written it (polling up to wait_s)."""
    pidfile = q(pidfile_for(log_path))
    return (
        f"n=0; while [ ! -s {pidfile} ] && [ $n -lt {max(int(wait_s * 20), 1)} ]; do sleep 0.05; n=$((n+1)); done; "
        f"cat -- {pidfile} 2>/dev/null"
    )


# A process's fields after the `(comm)`: state ppid pgrp session … starttime (field 22 of stat = 20th here).
_STAT_FIELDS = "sed 's/^.*) //' /proc/$p/stat 2>/dev/null | cut -d' ' -f1-4,20"


# `C PID cmdline` (flattened to one line, bounded) for the candidate $p.
_CMDLINE_LINE = "printf 'C %s ' \"$p\"; tr '\\0\\n' '  ' < /proc/$p/cmdline 2>/dev/null | head -c 300; echo"

# What tells a server that cannot be seen from one that is not there: `U UID INODE` for each socket that
# listens on $port (/proc/net/tcp names its uid even when that uid's /proc/PID/fd cannot be read), `W UID`
# the log's owner, `M UID` the uid this runs as. Needs $ph (the port in hex) and $log.
_VISIBILITY_LINES = (
    'awk -v ph="$ph" \'FNR > 1 && $4 == "0A" { n = split($2, a, ":"); if (a[n] == ph) print "U", $8, $10 }\' '
    "/proc/net/tcp /proc/net/tcp6 2>/dev/null\n"
    '[ -n "$log" ] && w=$(stat -L -c %u -- "$log" 2>/dev/null) && echo "W $w"\n'
    'echo "M $(id -u)"'
)


# `N PID PORT` for each `--port PORT` / `--port=PORT` in $p's command line (split at spaces, so the command a
# `sh -c` launcher runs counts too): the port its server says it serves, for `stop`'s agreement check.
_PORT_ARG_LINE = (
    "tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null | awk -v p=\"$p\" '{ for (i = 1; i <= NF; i++) "
    'if ($i == "--port" && i < NF) print "N", p, $(i + 1); else if (index($i, "--port=") == 1) '
    'print "N", p, substr($i, 8) }\''
)


def find_command(port: int | None, log_path: str | None) -> str:
    """Candidates for an adopted server: the pidfile's pid, the listener on PORT, the writers of LOG.

    Prints `pidfile PID`, `port PID`, `log PID POS` (POS: the position of its open file on the log, 0 while
    nothing was written through it, -1 when unread), `Z SIZE` and `Y MTIME` (the log's size and last change, read before its
    writers' positions), `T NOW UPTIME CLK_TCK` (to put the writers' start times on the same clock), then `S PID state ppid pgid sid start`, `E PID SGLANG_TUI_RUN=…`,
    `C PID cmdline` and `N PID PORT` (_PORT_ARG_LINE) for each candidate, then the _VISIBILITY_LINES.
    port None: the port names nobody of this server (a non-zero node shares node 0's): only the log does."""
    log = q(log_path) if log_path else "''"
    pidfile = q(pidfile_for(log_path)) if log_path else "/dev/null"
    ports = f"port={int(port)}; ph=$(printf '%04X' \"$port\")" if port is not None else "ph=none"
    return f"""{ports}; log={log}
ino=$(awk -v ph="$ph" 'FNR > 1 && $4 == "0A" {{ n = split($2, a, ":"); if (a[n] == ph) printf " %s", $10 }}' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
lg=; z=; y=; [ -n "$log" ] && lg=$(readlink -f -- "$log" 2>/dev/null) && z=$(stat -L -c %s -- "$log" 2>/dev/null) &&
  y=$(date -r "$lg" +%s.%N 2>/dev/null)
found=$({{ read -r p < {pidfile} && [ -n "$p" ] && echo "pidfile $p"
[ -n "$ino$lg" ] && ls -l /proc/[0-9]*/fd 2>/dev/null | awk -v ino="$ino " -v lg="$lg" '
/^\\/proc\\/[0-9]+\\/fd:$/ {{ split($0, a, "/"); pid = a[3]; next }}
{{ i = index($0, " -> "); if (!i) next; t = substr($0, i + 4)
  if (t ~ /^socket:\\[/) {{ if (index(ino, " " substr(t, 9, length(t) - 9) " ")) print "port", pid }}
  else if (lg != "" && t == lg && substr($1, 3, 1) == "w") {{
    n = split(substr($0, 1, i - 1), w, " "); pos = -1; f = "/proc/" pid "/fdinfo/" w[n]
    while ((getline l < f) > 0) if (l ~ /^pos:/) {{ split(l, x, " "); pos = x[2] }}
    close(f); print "log", pid, pos }} }}'; }} | sort -u)
[ -n "$found" ] && echo "$found"
[ -n "$z" ] && echo "Z $z"
[ -n "$y" ] && echo "Y $y" && echo "T $(date +%s.%N) $(cut -d' ' -f1 /proc/uptime) $(getconf CLK_TCK 2>/dev/null || echo 100)"
for p in $(echo "$found" | cut -d' ' -f2 | sort -u); do
  s=$({_STAT_FIELDS}) && [ -n "$s" ] && echo "S $p $s"
  tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep '^{MARKER_VAR}=' | sed "s/^/E $p /"
  {_CMDLINE_LINE}
  {_PORT_ARG_LINE}
done
{_VISIBILITY_LINES}; true"""


def listeners_command(port: int) -> str:
    """`U UID INODE` per socket listening on PORT: the find's first visibility line, alone (a one-shot look
    compares them with the last call's, and searches the fds for their owner only when they changed)."""
    return f"ph=$(printf '%04X' {int(port)})\n" + _VISIBILITY_LINES.split("\n", 1)[0]


def port_owner_command(port: int) -> str:
    """The watch's `powner` run once: the listeners, the processes that hold them, their command lines."""
    return _port_owner_func(port) + "\npowner"


@record
class Forked(Record):
    """How the scan finds what a forkserver started for the server (SGLang's SGLANG_EARLY_FORKSERVER=1: the ranks'
    OS parent is the forkserver, maybe a daemon in a session of its own, so no walk from the launcher reaches
    them): processes with an SGLang title (`sglang::…`) that hold the server's log open for writing (the launcher
    hands them its stdout and stderr) and started no earlier than its main process (an earlier launch's ranks
    writing the same log are not this one's). Not the run marker: a forked process shows the environment its
    forkserver was started with, so a daemon's children carry the marker of the launch that started the daemon.
    The forkserver itself holds no log and carries no rank: never a member. since: the main process's start
    time (clock ticks), 0 to read it from the main while it lives; unknown, nothing is taken."""

    log: str
    main: int | None = None
    since: int = 0


def _forked_prefix(forked: Forked | None) -> str:
    """`fw=" PID PID "`: the SGLang-titled writers of the log (one grep over the host's command lines, then one
    `ls -l` of those few processes' fds; this shell's own fd directory is listed too, so that `ls` always heads
    each directory with its name)."""
    if forked is None:
        return "fw=\n"
    awk = (
        r'/^\/proc\/[0-9]+\/fd:$/ { split($0, a, "/"); pid = a[3]; next } '
        '{ i = index($0, " -> "); if (i && substr($0, i + 4) == lg && substr($1, 3, 1) == "w") print pid }'
    )
    return (
        f"fw=$(lg=$(readlink -f -- {q(forked.log)} 2>/dev/null) && "
        "d=$(grep -l -z '^sglang::' /proc/[0-9]*/cmdline 2>/dev/null | sed 's,/cmdline$,/fd,') && [ -n \"$d\" ] && "
        f"ls -l $d /proc/$$/fd 2>/dev/null | awk -v lg=\"$lg\" {q(awk)} | sort -u | tr '\\n' ' ')\n"
    )


def scan_command(
    *,
    group: int | None,
    session: int | None,
    known: dict[int, int],
    cmdlines: bool = True,
    forked: Forked | None = None,
) -> str:
    """The server's processes: same process group, same session, a known (pid, start), or a descendant of any
    of those. Prints `P pid ppid pgid sid state start` then `C pid cmdline` for each.

    Not the run marker: it is inherited by whatever the launch starts, and kept by what leaves the launch's
    session (a tmux server and every window's job, a `stop` run from one of them), so outside the session it
    says nothing about whose a process is, and inside it the session already says it. A known process that
    has left the session since it was seen daemonised (tmux's server, forked by the launch), and is no longer
    the server's. Never the shell that scans, nor its ancestors: the tool itself, wherever it runs."""
    known_text = " ".join(f"{pid}:{start}" for pid, start in sorted(known.items()))
    return _scan(group=group, session=session, known_word=q(" " + known_text + " "), cmdlines=cmdlines, forked=forked)


def _scan(
    *, group: int | None, session: int | None, known_word: str, cmdlines: bool = True, forked: Forked | None = None
) -> str:
    """scan_command with the known `pid:start` list given as one sh word (a literal, or `" $known "` in the watch).
    cmdlines=False: the `P` lines alone (no fork per process; a caller that knows their names already)."""
    # A newline inside an argument would start a line of its own: the cmdline is flattened to one line.
    names = (
        """ | while read -r tag p rest; do
  echo "$tag $p $rest"; printf 'C %s ' "$p"; tr '\\0\\n' '  ' < /proc/$p/cmdline 2>/dev/null | head -c 300; echo
done"""
        if cmdlines
        else ""
    )
    main, since = (int(forked.main or 0), int(forked.since)) if forked else (0, 0)
    return f"""{_forked_prefix(forked)}cat /proc/[0-9]*/stat 2>/dev/null | awk -v me=$$ -v g={int(group or 0)} -v s={int(session or 0)} -v known={known_word} -v fw=" $fw " -v mn={main} -v since={since} '
{{ pid = $1; rest = $0; sub(/^.*\\) /, "", rest); split(rest, f, " ")
  st[pid] = f[1]; pp[pid] = f[2]; pg[pid] = f[3]; sd[pid] = f[4]; tm[pid] = f[20]
  if (pid > 1 && ((g > 1 && f[3] == g) || (s > 1 && f[4] == s) || (index(known, " " pid ":" f[20] " ") && (s <= 1 || f[4] == s)))) mem[pid] = 1 }}
END {{ for (x = me; (x in pp) && !(x in ours); x = pp[x]) ours[x] = 1
  m0 = since + 0; if (!m0 && (mn in tm)) m0 = tm[mn] + 0
  n = split(fw, fk, " "); for (i = 1; m0 && i <= n; i++) if ((fk[i] in pp) && fk[i] > 1 && tm[fk[i]] + 0 >= m0) mem[fk[i]] = 1
  for (p in ours) delete mem[p]
  do {{ c = 0; for (p in pp) if (p + 0 > 1 && !(p in mem) && !(p in ours) && (pp[p] in mem)) {{ mem[p] = 1; c = 1 }} }} while (c)
  for (p in mem) print "P", p, pp[p], pg[p], sd[p], st[p], tm[p] }}'{names}"""


def known_live_command(known: dict[int, int]) -> str:
    """`P pid ppid pgid sid state start` for each known (pid, start) still that very process (a zombie's line says
    Z): the scan of a server ready at the last look (tui.sources.procwatch_once), with no fork. The shell's `read`
    of each /proc/PID/stat; NowHost reads the same files (tui.sources.now.known_live)."""
    return (
        f"known={q(_pairs(known))}\n"
        'for k in $known; do p=${k%%:*}; { read -r l < "/proc/$p/stat"; } 2>/dev/null || continue\n'
        '  set -- ${l##*) }; [ "${20}" = "${k#*:}" ] && echo "P $p $2 $3 $4 $1 ${20}"; done; :'
    )


# Shell functions with no forks: `live PID START` is true while that very process (same start time, so
# never a reused pid) exists and is not a zombie.
# `mine GROUP`: this shell or one of its ancestors (the tool itself, with `local`) is in that process group.
PROC_FUNCS = (
    'st() { { read -r l < "/proc/$1/stat"; } 2>/dev/null || return 1; set -- ${l##*) }; S=$1; P=$2; G=$3; T=${20}; }\n'
    'live() { st "$1" && [ "$T" = "$2" ] && [ "$S" != Z ] && [ "$S" != X ]; }\n'
    'mine() { x=$$; while [ "$x" -gt 1 ] && st "$x"; do [ "$G" = "$1" ] && return 0; x=$P; done; return 1; }'
)


def _pairs(procs: dict[int, int]) -> str:
    return " ".join(f"{pid}:{start}" for pid, start in sorted(procs.items()) if pid > 1)


def signal_group_command(signal: str, group: int) -> str:
    """Signal a whole process group (the server launched with setsid, or adopted as its own group), unless
    the tool itself is in it (needs PROC_FUNCS)."""
    return f"mine {int(group)} || kill -s {signal} -- -{int(group)} 2>/dev/null"


def signal_pids_command(signal: str, procs: dict[int, int]) -> str:
    """Signal each pid whose start time still matches (so a reused pid is never hit)."""
    return (
        f"for ps in {_pairs(procs)}; do live ${{ps%%:*}} ${{ps#*:}} && "
        f"kill -s {signal} -- ${{ps%%:*}} 2>/dev/null; done"
    )


def wait_gone_command(procs: dict[int, int], limit_s: float) -> str:
    """Poll (every 0.1 s, up to limit_s) until none of these processes is alive; on the host, one round trip."""
    ticks = max(int(limit_s * 10), 1)
    return (
        f"n=0; while [ $n -lt {ticks} ]; do a=; for ps in {_pairs(procs)}; do "
        f'live ${{ps%%:*}} ${{ps#*:}} && a=1 && break; done; [ -z "$a" ] && break; n=$((n+1)); sleep 0.1; done'
    )


def stop_command(signal: str, *, group: int | None, procs: dict[int, int], wait_s: float, scan: str) -> str:
    """Signal the server (its group when it owns one, and each process by pid + start time), wait for them
    to go, then scan for what is left: one command, one round trip."""
    steps = [PROC_FUNCS]
    if group and group > 1:
        steps.append(signal_group_command(signal, group))
    steps += [signal_pids_command(signal, procs), wait_gone_command(procs, wait_s), scan]
    return "\n".join(steps)


# ------------------------------------------------------------------------------------------- the watch

# The watch loops end with their channel: a watchdog holds the channel's stdin (on fd 3: a non-interactive
# sh gives background jobs /dev/null) and TERMs the loop at EOF; the loop then ends its sleep and exits.
# `nap` sleeps in the background so the TERM is handled at once, not after the sleep. Nobody reads the
# loop's stderr (find_command's missing pidfile says so every time): unread, it would fill the channel.
_WATCH_PROLOGUE = """exec 2>/dev/null 3<&0
me=$$
{ cat <&3 >/dev/null 2>&1; kill -s TERM "$me" 2>/dev/null; } >/dev/null 2>&1 &
w=$!
exec 3<&-
z=
trap 'kill "$z" 2>/dev/null; exit 0' TERM HUP PIPE INT
trap 'kill "$w" 2>/dev/null' EXIT
nap() { sleep "$1" & z=$!; wait "$z"; z=; }"""

# `up PID`: the process exists and is not a zombie, read from the State line of /proc/PID/status (the 3rd
# line: a few bytes, where dash's byte-wise `read` of /proc/PID/stat costs ~0.4 ms a process). No start
# time: a pid reused between two checks would need the pid space to wrap within `interval`.
_UP_FUNC = (
    'up() { [ -d "/proc/$1" ] || return 1; '
    '{ while read -r k v r; do [ "$k" = State: ] && break; done < "/proc/$1/status"; } 2>/dev/null '
    "|| return 1; "
    '[ "$v" != Z ] && [ "$v" != X ]; }'
)

# What a watch prints: `K` when every known process was still alive at a check; a block `S`, the lines of
# scan_command, `.` after a full scan; a block `F`, the lines of find_command, `.` after a search; after
# each full scan a block `O`, the lines of _PORT_OWNER_FUNC (who listens on the port).
WATCH_ALIVE, WATCH_SCAN, WATCH_FIND, WATCH_END = "K", "S", "F", "."
WATCH_PORT = "O"


def _port_owner_func(port: int) -> str:
    """`powner`: `U UID INODE` per socket listening on PORT, `port PID` per process that holds one, `C PID
    cmdline` of those, `M UID` (this uid). The fd search (every fd on the host) runs only when the
    listening sockets changed since the last call; otherwise the last answer is printed again."""
    return rf"""ph=$(printf '%04X' {int(port)}); mu=$(id -u); pl=-; po=
powner() {{
  l=$(awk -v ph="$ph" 'FNR > 1 && $4 == "0A" {{ n = split($2, a, ":"); if (a[n] == ph) print "U", $8, $10 }}' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  if [ "$l" != "$pl" ]; then
    pl=$l; po=
    ino=$(printf '%s\n' "$l" | awk 'NF == 3 {{ printf " %s", $3 }}')
    [ -n "$ino" ] && po=$(ls -l /proc/[0-9]*/fd 2>/dev/null | awk -v ino="$ino " '
/^\/proc\/[0-9]+\/fd:$/ {{ split($0, a, "/"); pid = a[3]; next }}
{{ i = index($0, " -> "); if (!i) next; t = substr($0, i + 4)
  if (t ~ /^socket:\[/ && index(ino, " " substr(t, 9, length(t) - 9) " ")) print "port", pid }}' | sort -u)
    for p in $(printf '%s\n' "$po" | cut -d' ' -f2); do
      po="$po
$({_CMDLINE_LINE})"
    done
  fi
  printf '%s\n%s\nM %s\n' "$l" "$po" "$mu"
}}"""


WATCH_ACTIVITY = "A"  # `A CLK_TCK`, then the lines of `act`, `.` (issue 13)


def watch_scan_command(
    *,
    group: int | None,
    session: int | None,
    known: dict[int, int],
    interval: float,
    rescan_s: float,
    first_rescan_s: float | None = None,
    port: int | None = None,
    activity: bool = False,
    forked: Forked | None = None,
) -> str:
    """A loop on the host: every `interval` s check that the known processes exist and are no zombies (no
    fork); scan fully when one is gone or none is known, and otherwise after `first_rescan_s` (default: one
    check), doubling while the scan finds the same processes up to `rescan_s` (back to the first when not).
    With `activity`, each check is preceded by an activity block (`act`, issue 13) and each scan followed
    by `hubdir`."""
    cap = max(1, int(rescan_s / interval))
    funcs = watch_activity_funcs() + "\nhubdir" if activity else ""
    first = min(cap, max(1, int((first_rescan_s or interval) / interval)))
    scan = _scan(group=group, session=session, known_word='" $known "', forked=forked)
    owner_func = _port_owner_func(port) if port else ""
    # powner runs in this shell (not in $(…)), so what it remembers lasts to the next scan.
    owner_step = f"\n    echo {WATCH_PORT}; powner; echo {WATCH_END}" if port else ""
    return f"""{_WATCH_PROLOGUE}
{_UP_FUNC}
{owner_func}
all_up() {{ for ps in $known; do up "${{ps%%:*}}" || return 1; done; }}
known={q(_pairs(known))}; gap={first}; left=0
{funcs}
while :; do
  {"act" if activity else ":"}
  if [ "$left" -le 0 ] || [ -z "$known" ] || ! all_up; then
    out=$({scan})
    printf '{WATCH_SCAN}\\n%s\\n{WATCH_END}\\n' "$out"{owner_step}
    now=$(printf '%s\\n' "$out" | awk '$1 == "P" && $6 != "Z" && $6 != "X" {{ print $2 ":" $7 }}' | sort | tr '\\n' ' ')
    if [ "$now" = "$known" ]; then gap=$((gap * 2)); [ "$gap" -gt {cap} ] && gap={cap}; else gap={first}; fi
    known=$now; left=$gap{"; hubdir" if activity else ""}
  else
    echo {WATCH_ALIVE}
  fi
  left=$((left - 1))
  nap {interval:g}
done"""


# ------------------------------------------------------------------- the watch: activity beyond the log

# Issue 13. Two sh functions the scan watch calls; kept apart from the rest of the loop.
# `hubdir`, after each full scan: the HF hub cache the server uses, from the environments of its processes
# (HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub, HOME/.cache/huggingface/hub), else this shell's HOME.
# `act`, at every check: ONE awk that walks the server's tree from the known pids (every thread's
# /proc/PID/task/TID/children, then the main threads' of what it finds) and prints, per process,
# `R pid ppid cpu_ticks read_bytes comm state rss_pages`, and `J pid ppid comm cmdline` for compilers; then, only when
# `*.incomplete` blobs exist in the cache, one `wc -c` for their sizes: `H bytes files DIR`.
# The block starts with `A`, the clock tick rate and the page size (`A 100 4096`) and ends with `.`.
COMPILERS = (
    "nvcc",
    "cicc",
    "ptxas",
    "ninja",
    "cc1plus",
    "cc1",
    "gcc",
    "g++",
    "c++",
    "cc",
    "cudafe++",
    "fatbinary",
    "nvlink",
    "ld",
    "as",
)
_COMPILE_WORKERS = ("compile_worker", "deep_gemm", "deepgemm", "flashinfer")  # python that drives them

_ACT_AWK = r"""function kids(f,   l, c, i, k) { if ((getline l < f) > 0) { k = split(l, c, " ")
    for (i = 1; i <= k; i++) if (c[i] > 1 && !(c[i] in want)) { want[c[i]] = 1; q[++qn] = c[i] } }
  close(f) }
BEGIN { n = split(pids, a, " "); for (i = 1; i <= n; i++) { split(a[i], b, ":"); p = b[1]
    if (p > 1 && !(p in want)) { want[p] = 1; known[p] = 1; q[++qn] = p } }
  m = split(cc, c, " "); for (i = 1; i <= m; i++) comp[c[i]] = 1
  m = split(cw, c, " "); for (i = 1; i <= m; i++) worker[c[i]] = 1
  m = split(tasks, t, " "); for (j = 1; j <= m; j++) kids(t[j])
  for (h = 1; h <= qn; h++) if (!(q[h] in known)) kids("/proc/" q[h] "/task/" q[h] "/children")
  for (h = 1; h <= qn; h++) { p = q[h]; f = "/proc/" p "/stat"
    if ((getline l < f) <= 0) { close(f); continue } close(f)
    comm = l; sub(/^[0-9]+ \(/, "", comm); sub(/\) [A-Za-z] .*$/, "", comm); gsub(/[^A-Za-z0-9_.:+-]/, "_", comm)
    r = l; sub(/^.*\) /, "", r); split(r, s, " ")
    if (s[1] == "Z" || s[1] == "X") continue
    rb = "-"; f = "/proc/" p "/io"; while ((getline l < f) > 0) if (l ~ /^read_bytes: /) rb = substr(l, 13); close(f)
    print "R", p, s[2], s[12] + s[13], rb, comm, s[1], s[22]
    if ((p in known) && !(comm in comp)) continue
    cmd = ""; f = "/proc/" p "/cmdline"; if ((getline cmd < f) > 0) {} close(f)
    gsub(/\000/, " ", cmd); gsub(/[^ -~]/, "?", cmd); cmd = substr(cmd, 1, 240)
    a0 = cmd; sub(/ .*$/, "", a0); sub(/^.*\//, "", a0)
    w = 0; for (k in worker) if (index(cmd, k)) w = 1
    if ((comm in comp) || (a0 in comp) || (w && comm ~ /^(python|pt_)/)) print "J", p, s[2], ((a0 in comp) ? a0 : comm), cmd } }"""

# The hub cache from the processes' environments (read with getline: a process gone meanwhile is skipped).
_HUB_AWK = r"""BEGIN { RS = "\000"; n = split(pids, a, " ")
  for (i = 1; i <= n; i++) { split(a[i], b, ":"); f = "/proc/" b[1] "/environ"
    while ((getline l < f) > 0) if (l ~ /^(HF_HUB_CACHE|HUGGINGFACE_HUB_CACHE|HF_HOME|HOME)=/) {
      j = index(l, "="); k = substr(l, 1, j - 1); if (!(k in v)) v[k] = substr(l, j + 1) }
    close(f) }
  if (v["HF_HUB_CACHE"] != "") print v["HF_HUB_CACHE"]
  else if (v["HUGGINGFACE_HUB_CACHE"] != "") print v["HUGGINGFACE_HUB_CACHE"]
  else if (v["HF_HOME"] != "") print v["HF_HOME"] "/hub"
  else if (v["HOME"] != "") print v["HOME"] "/.cache/huggingface/hub" }"""

_ACT_FUNCS = (
    f'hubdir() {{ hub=$(awk -v pids="$known" {q(_HUB_AWK)} < /dev/null); '
    '[ -n "$hub" ] || hub="$HOME/.cache/huggingface/hub"; }\n'
    'act() { ts=; for ps in $known; do for f in /proc/${ps%%:*}/task/*/children; do ts="$ts $f"; done; done\n'
    '  echo "A $clk $pg"\n'
    f'  awk -v pids="$known" -v tasks="$ts" -v cc={q(" ".join(COMPILERS))} '
    f"-v cw={q(' '.join(_COMPILE_WORKERS))} {q(_ACT_AWK)} < /dev/null\n"
    '  set -- "$hub"/*--*/blobs/*.incomplete\n'
    '  [ -e "$1" ] && wc -c -- "$@" 2>/dev/null | awk -v d="$hub" -v n=$# '
    "'n == 1 || NR <= n { b += $1; c++ } END { print \"H\", b + 0, c + 0, d }'\n"
    "  echo .; }"
)


def watch_activity_funcs() -> str:
    """The sh functions `hubdir` and `act` (see above), and the clock tick rate, read once."""
    return (
        "clk=$(getconf CLK_TCK 2>/dev/null || echo 100); pg=$(getconf PAGESIZE 2>/dev/null || echo 4096); hub=\n"
        + _ACT_FUNCS
    )


def activity_command(known: dict[int, int]) -> str:
    """One activity block (`hubdir`, then `act`) of the known processes, for a one-shot look (`probe`): the
    functions the watch runs, run once."""
    return f"{watch_activity_funcs()}\nknown={q(_pairs(known))}\nhubdir\nact"


def watch_find_command(port: int | None, log_path: str | None, *, every_s: float, find: str | None = None) -> str:
    """A loop on the host: find_command (or the `find` given) every `every_s` s, each answer as one block,
    until a server is found (the caller then starts a scan watch on it)."""
    return f"""{_WATCH_PROLOGUE}
while :; do
  out=$({find if find is not None else find_command(port, log_path)})
  printf '{WATCH_FIND}\\n%s\\n{WATCH_END}\\n' "$out"
  nap {every_s:g}
done"""


# ------------------------------------------------------------------------------------------------- parsing


@record
class Proc(Record):
    """One process as the scans see it (start: clock ticks since boot, to tell a reused pid apart)."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    start: int
    name: str = ""
    marker: str | None = None  # the run marker in its environment, when it carries one

    @property
    def alive(self) -> bool:
        """A zombie holds nothing and only waits to be reaped: it does not count as alive."""
        return self.state not in ("Z", "X")


def _cmdline_line(line: str, names: dict[int, str]) -> bool:
    """A `C PID cmdline` line: its command line kept under its pid in `names` (True), else False."""
    parts = line.split(" ", 2)
    if len(parts) < 2 or parts[0] != "C" or not parts[1].isdigit():
        return False
    names[int(parts[1])] = (parts[2] if len(parts) > 2 else "").strip()
    return True


def parse_scan(text: str) -> dict[int, Proc]:
    """Output of scan_command as pid -> Proc (lines that do not parse are skipped)."""
    procs: dict[int, Proc] = {}
    names: dict[int, str] = {}
    for line in text.splitlines():
        if _cmdline_line(line, names):
            continue
        fields = line.split()
        if len(fields) == 7 and fields[0] == "P":
            try:
                pid, ppid, pgid, sid = (int(x) for x in fields[1:5])
                procs[pid] = Proc(pid, ppid, pgid, sid, fields[5], int(fields[6]))
            except ValueError:
                continue
    return {pid: Proc(**{**p.__dict__, "name": names.get(pid, "")}) for pid, p in procs.items()}


@record
class FindResult(Record):
    pidfile: int | None
    port_pids: tuple[int, ...]
    log_pids: tuple[int, ...]
    procs: dict[int, Proc]
    listeners: tuple[tuple[int, int], ...] = ()  # (uid, socket inode) of each socket listening on the port
    log_uid: int | None = None  # the log file's owner
    my_uid: int | None = None  # the uid the commands ran as
    names: dict[int, str] = field(default_factory=dict)  # pid -> command line, where readable
    log_pos: dict[int, int] = field(default_factory=dict)  # log writer -> its open file's position on the log
    log_size: int | None = None  # the log's size, read just before the positions
    named_ports: dict[int, tuple[int, ...]] = field(default_factory=dict)  # pid -> the `--port`s its command names

    log_mtime: float | None = None  # the log's last change (epoch seconds, the host's clock)
    boot_at: float | None = None  # the host's boot time on that clock (now - uptime), for the start times
    clock_ticks: int = 100  # the start times' unit (CLK_TCK)

    @property
    def quiet_writers(self) -> tuple[int, ...]:
        """Live writers of the log that have written nothing to it: nothing was ever written through their
        open file (position 0: `launch … >> LOG`), or they started after the log last changed (Python's
        append mode starts at the end). A launch that has not printed its first line yet."""
        return tuple(pid for pid in sorted(self.log_pos) if self._alive(pid) and self._quiet(pid))

    def _quiet(self, pid: int) -> bool:
        if self.log_pos[pid] == 0:
            return True
        started = self.started_at(pid)
        return started is not None and self.log_mtime is not None and started > self.log_mtime + 2 / self.clock_ticks

    def started_at(self, pid: int) -> float | None:
        """When the process started, on the host's clock (None: unknown)."""
        p = self.procs.get(pid)
        return None if p is None or self.boot_at is None else self.boot_at + p.start / self.clock_ticks

    def _alive(self, pid: int) -> bool:
        p = self.procs.get(pid)
        return p is not None and p.alive


def parse_find(text: str) -> FindResult:
    """Output of find_command."""
    pidfile: int | None = None
    port: set[int] = set()
    log: dict[int, int] = {}
    log_size: int | None = None
    named: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    markers: dict[int, str] = {}
    seen = _parse_visibility(text)
    clocks = _parse_clocks(text)
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 2 or not fields[1].isdigit():
            continue
        pid = int(fields[1])
        if fields[0] == "pidfile":
            pidfile = pid
        elif fields[0] == "port":
            port.add(pid)
        elif fields[0] == "log":
            pos = int(fields[2]) if len(fields) > 2 and fields[2].isdigit() else 1  # unread (-1): not "nothing written"
            log[pid] = max(log.get(pid, 0), pos)
        elif fields[0] == "Z" and len(fields) == 2:
            log_size = pid  # `Z SIZE`: the number in the pid's place
        elif fields[0] == "N" and len(fields) == 3 and fields[2].isdigit() and 0 < int(fields[2]) < 65536:
            named.setdefault(pid, []).append(int(fields[2]))
        elif fields[0] == "S" and len(fields) == 7:
            stats[pid] = fields[2:]
        elif fields[0] == "E" and len(fields) == 3 and fields[2].startswith(MARKER_VAR + "="):
            markers[pid] = fields[2].split("=", 1)[1]
    procs = {}
    for pid, (state, ppid, pgid, sid, start) in stats.items():
        try:
            procs[pid] = Proc(pid, int(ppid), int(pgid), int(sid), state, int(start), marker=markers.get(pid))
        except ValueError:
            continue
    return FindResult(
        pidfile,
        tuple(sorted(port)),
        tuple(sorted(log)),
        procs,
        log_pos=log,
        log_size=log_size,
        **clocks,  # type: ignore[arg-type]
        named_ports={pid: tuple(sorted(set(ports))) for pid, ports in named.items()},
        **seen,  # type: ignore[arg-type]
    )


def _parse_clocks(text: str) -> dict[str, object]:
    """The `Y MTIME` and `T NOW UPTIME CLK_TCK` lines of a find as FindResult fields (none when unreadable)."""
    out: dict[str, object] = {}
    for line in text.splitlines():
        fields = line.split()
        try:
            if fields[:1] == ["Y"] and len(fields) == 2:
                out["log_mtime"] = float(fields[1])
            elif fields[:1] == ["T"] and len(fields) == 4:
                out["boot_at"] = float(fields[1]) - float(fields[2])
                out["clock_ticks"] = int(fields[3]) or 100
        except ValueError:  # a `date` without %N, say: the start-time rule is then not used
            out.pop("log_mtime", None)
            out.pop("boot_at", None)
    return out if "log_mtime" in out and "boot_at" in out else {}


def _parse_visibility(text: str) -> dict[str, object]:
    """The _VISIBILITY_LINES and `C` lines of a find (or of a watch's port block) as FindResult fields."""
    listeners: list[tuple[int, int]] = []
    log_uid = my_uid = None
    names: dict[int, str] = {}
    for line in text.splitlines():
        if _cmdline_line(line, names):
            continue
        fields = line.split()
        if not all(f.isdigit() for f in fields[1:]) or len(fields) < 2:
            continue
        if fields[0] == "U" and len(fields) == 3:
            listeners.append((int(fields[1]), int(fields[2])))
        elif fields[0] == "W" and len(fields) == 2:
            log_uid = int(fields[1])
        elif fields[0] == "M" and len(fields) == 2:
            my_uid = int(fields[1])
    return {"listeners": tuple(sorted(set(listeners))), "log_uid": log_uid, "my_uid": my_uid, "names": names}


def hidden_owner(found: FindResult) -> tuple[bool, int | None]:
    """(hidden, owner uid) for a find that found no server: hidden when what marks the server (a socket
    listening on the port, the log file) belongs to another uid whose /proc/PID/fd this uid cannot read,
    so "not found" says nothing about whether it runs. Root reads every process: never hidden."""
    if found.my_uid is None or found.my_uid == 0:
        return False, None
    others = [uid for uid, _ in found.listeners if uid != found.my_uid]
    if others and not found.port_pids:
        return True, others[0]  # something listens on the port, and no process we can read holds it
    if found.log_uid is not None and found.log_uid != found.my_uid and not found.log_pids:
        return True, found.log_uid
    return False, None


def in_tree(p: Proc, main: Proc, procs: dict[int, Proc]) -> bool:
    """Whether p is main, or shares the group/session main leads, or descends from main (among procs)."""
    leads_group, leads_session = main.pgid == main.pid, main.sid == main.pid
    if p.pid == main.pid or (leads_group and p.pgid == main.pid) or (leads_session and p.sid == main.pid):
        return True
    seen: set[int] = set()
    while p.ppid in procs and p.ppid not in seen:
        seen.add(p.ppid)
        p = procs[p.ppid]
        if p.pid == main.pid:
            return True
    return False


SGLANG_TITLE = "sglang::"  # the title SGLang gives its child processes (`sglang::scheduler_TP0`, `sglang::detokenizer`)


def launches(found: FindResult) -> list[tuple[Proc, set[int]]]:
    """The log's live writers grouped by launch, oldest first: (root, its writers). A writer joins the launch
    of its nearest ancestor that writes the log too; one with none is the root of a launch of its own (`launch …
    >> LOG` while an earlier server still writes it), unless it carries an SGLang child title (a rank that left
    its tree): that joins the launch whose group or session it shares, and is no launch by itself."""
    live = {pid: p for pid, p in found.procs.items() if p.alive and pid in found.log_pids}

    def root_of(p: Proc) -> Proc:
        seen = {p.pid}
        while p.ppid in live and p.ppid not in seen:
            seen.add(p.ppid)
            p = live[p.ppid]
        return p

    groups: dict[int, set[int]] = {}
    for p in live.values():
        groups.setdefault(root_of(p).pid, set()).add(p.pid)
    roots = {pid: live[pid] for pid in groups if not found.names.get(pid, "").startswith(SGLANG_TITLE)}
    for pid in [pid for pid in groups if pid not in roots]:  # a titled rank alone: to the launch it shares
        rank = live[pid]
        home = next((r for r in roots.values() if rank.pgid in (r.pid, r.pgid) or rank.sid in (r.pid, r.sid)), None)
        if home is not None:
            groups[home.pid] |= groups.pop(pid)
    ordered = sorted(roots.values(), key=lambda p: (p.start, p.pid))
    return [(root, groups[root.pid]) for root in ordered]


def latest_launch(found: FindResult) -> set[int] | None:
    """The writers of the log's latest launch when several launches write it, else None (one launch, or none)."""
    found_launches = launches(found)
    return found_launches[-1][1] if len(found_launches) > 1 else None


def is_forwarder(found: FindResult, pid: int) -> bool:
    return bool(forwarder(found.names.get(pid, "")))


def pick_main(found: FindResult) -> Proc | None:
    """The server's main process: the pidfile's marked session leader, else the topmost listener, else the
    topmost log writer. A forwarder on the port (docker-proxy, socat) is never the server; when several launches
    write the log, the server is its latest launch (an earlier one that still listens is something else)."""
    live = {pid: p for pid, p in found.procs.items() if p.alive}
    recorded = live.get(found.pidfile) if found.pidfile is not None else None
    if recorded is not None and recorded.sid == recorded.pid and recorded.marker:
        return recorded  # still our launcher's session leader (a reused pid would lack the run marker)
    listeners = tuple(pid for pid in found.port_pids if not is_forwarder(found, pid))
    writers = found.log_pids
    latest = latest_launch(found)
    if latest is not None:
        writers = tuple(sorted(latest))
        listeners = tuple(pid for pid in listeners if pid in latest)
    order: tuple[tuple[int, ...], ...] = (listeners, writers)
    if any(pid in live for pid in writers) and not set(listeners) & set(writers):
        order = (writers,)  # the port is held by something that does not write the log: not the server
    for pids in order:
        candidates = [live[pid] for pid in pids if pid in live]
        roots = [p for p in candidates if p.ppid not in {c.pid for c in candidates}]
        # an SGLang-titled process is a rank, never the main one (a forkserver's outside the tree, or another's)
        roots = [p for p in roots if not found.names.get(p.pid, "").startswith(SGLANG_TITLE)] or roots
        if roots:
            return min(roots, key=lambda p: (p.start, p.pid))
    return None


def disagreement(found: FindResult, port: int, log_path: str) -> str | None:
    """One line when the port and the log name two different servers (or the log's names another port and
    nothing serves this one), else None. The port's listener (a forwarder aside) and the log's writers (and
    its pidfile's launcher) are each a process tree; they agree when one tree holds both."""
    live = {pid: p for pid, p in found.procs.items() if p.alive}
    listeners = [live[pid] for pid in found.port_pids if pid in live and not is_forwarder(found, pid)]
    launcher = live.get(found.pidfile) if found.pidfile is not None else None
    launched = [launcher] if launcher is not None and launcher.sid == launcher.pid and launcher.marker else []
    writers = [live[pid] for pid in found.log_pids if pid in live] + launched
    if not writers:
        return None  # the log names no live server: the port decides, as before

    def who(p: Proc) -> str:
        command = found.names.get(p.pid, "")
        return f"PID {p.pid}" + (f" ({command[:80]})" if command else "")

    writer = min(writers, key=lambda p: (p.start, p.pid))
    if listeners:
        if any(in_tree(a, b, found.procs) or in_tree(b, a, found.procs) for a in listeners for b in writers):
            return None  # one server: its listener writes the log, or descends from a writer, or leads it
        listener = min(listeners, key=lambda p: (p.start, p.pid))
        return f"port {port} is served by {who(listener)}, but {log_path} is written by {who(writer)}: two servers"
    named = sorted({n for p in writers for n in found.named_ports.get(p.pid, ())})
    if named and port not in named:
        ports = ", ".join(map(str, named))
        return f"nothing serves port {port}, but {log_path} is written by {who(writer)}, started with --port {ports}"
    return None


def parse_activity(text: str, names: dict[int, str] | None = None) -> HostActivity:
    """Output of `act` (the block, its `A CLK_TCK` line first) as a HostActivity; names: pid -> title from the
    scans (the kernel's short name stops at 15 bytes: `sglang::schedul`)."""
    names = names or {}
    clk, page = 100.0, 4096
    procs: list[ProcCounters] = []
    compilers: list[CompilerProc] = []
    download: int | None = None
    files, cache = 0, ""
    for line in text.splitlines():
        f = line.split(" ", 5)
        try:
            if f[0] == WATCH_ACTIVITY and len(f) >= 2:
                clk = float(f[1]) or 100.0
                page = int(f[2]) if len(f) >= 3 and f[2].isdigit() else page
            elif f[0] == "R" and len(f) >= 6:
                pid = int(f[1])
                rest = f[5].split(" ")  # comm (no spaces), then state and RSS pages where the watch sent them
                procs.append(
                    ProcCounters(
                        pid,
                        int(f[2]),
                        names.get(pid) or rest[0],
                        int(f[3]) / clk,
                        int(f[4]) if f[4].isdigit() else None,
                        state=rest[1] if len(rest) > 1 else "",
                        rss_bytes=int(rest[2]) * page if len(rest) > 2 and rest[2].isdigit() else None,
                    )
                )
            elif f[0] == "J" and len(f) >= 5:
                compilers.append(CompilerProc(int(f[1]), int(f[2]), f[3], " ".join(f[4:]).strip()))
            elif f[0] == "H" and len(f) >= 3:
                download, files = int(f[1]), int(f[2])
                cache = line.split(" ", 3)[3] if len(f) >= 4 else ""
        except ValueError:
            continue
    return HostActivity(tuple(procs), tuple(compilers), download, files, cache)
