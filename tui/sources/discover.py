"""Find the SGLang servers running on a host, in one command through the Host (parsed in tui.core.discovery).

A server's processes are titled `sglang::…` (scheduler, detokenizer); its main process is their first
ancestor whose title is not `sglang::…` (the python running `sglang.launch_server`). Its arguments give the
port and model, and where its fd 1 and 2 point gives its log (a terminal, a pipe or /dev/null: no log file).
Reads /proc only (grep -z, sed, readlink); finds nothing by process name but the title SGLang itself sets.
"""

from __future__ import annotations

import shlex

from tui.core.discovery import SEP, FoundServer, parse_discovery
from tui.sources.host import Host

# A titled process with no untitled ancestor was forked by a forkserver (SGLANG_EARLY_FORKSERVER=1: maybe a daemon,
# re-parented to init): its launcher is the untitled process whose stderr is the same file (the launcher hands the
# forkserver its fds), the bottom-most of them (a `sh -c` wrapper writing the same file is its ancestor). Never the
# forkserver: it carries no output of the launch.
_SAME_OUTPUT_AWK = r"""{ i = index($0, " -> "); if (!i || substr($0, i + 4) != t) next
  n = split(substr($0, 1, i - 1), w, " "); split(w[n], a, "/"); pid = a[3]
  f = "/proc/" pid "/cmdline"; c = ""; if ((getline c < f) > 0) {} close(f)
  if (index(c, "sglang::") == 1) next
  f = "/proc/" pid "/stat"; l = ""; if ((getline l < f) > 0) {} close(f); sub(/^.*\) /, "", l); split(l, s, " ")
  cand[pid] = s[2] }
END { for (p in cand) if (cand[p] in cand) up[cand[p]] = 1
  for (p in cand) if (!(p in up)) print p }"""

# For each `sglang::` process (argv[0] up to its NUL), walk up the parents while they are `sglang::` too.
DISCOVER_COMMAND = (
    "for f in $(grep -lsz -- '^sglang::' /proc/[0-9]*/cmdline 2>/dev/null); do p=${f#/proc/}; p=${p%/cmdline}; m=$p\n"
    "  while :; do pp=$(sed 's/^.*) //' /proc/$m/stat 2>/dev/null | cut -d' ' -f2)\n"
    '    [ -n "$pp" ] && [ "$pp" -gt 1 ] || break\n'
    "    m=$pp; grep -qsz -- '^sglang::' /proc/$pp/cmdline || break; done\n"
    '  echo "$m"\n'
    "  grep -qsz -- '^sglang::' /proc/$m/cmdline && t=$(readlink /proc/$p/fd/2 2>/dev/null) && case $t in /*)\n"
    f'    ls -l /proc/[0-9]*/fd/2 2>/dev/null | awk -v t="$t" {shlex.quote(_SAME_OUTPUT_AWK)} ;; esac\n'
    "done | sort -un | while read -r p; do\n"
    "  grep -qsz -- '^sglang::' /proc/$p/cmdline && continue\n"
    f"  printf 'A %s ' \"$p\"; tr '\\0\\n' '{SEP} ' < /proc/$p/cmdline 2>/dev/null | head -c 4000; echo\n"
    '  for fd in 1 2; do printf \'O %s %s %s\\n\' "$p" "$fd" "$(readlink /proc/$p/fd/$fd 2>/dev/null)"; done\n'
    "done; true"
)


async def discover(host: Host, *, timeout: float = 15.0) -> list[FoundServer]:
    """The SGLang servers on the host, by main pid (an empty list when there are none or none can be seen)."""
    result = await host.run(DISCOVER_COMMAND, timeout=timeout)
    return parse_discovery(result.stdout.decode("utf-8", "replace"))
