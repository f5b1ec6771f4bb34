"""Find the SGLang servers running on a host, in one command through the Host (parsed in tui.core.discovery).

A server's processes are titled `sglang::…` (scheduler, detokenizer); its main process is their first
ancestor whose title is not `sglang::…` (the python running `sglang.launch_server`). Its arguments give the
port and model, and where its fd 1 and 2 point gives its log (a terminal, a pipe or /dev/null: no log file).
Reads /proc only (grep -z, sed, readlink); finds nothing by process name but the title SGLang itself sets.
"""

from __future__ import annotations

from tui.core.discovery import SEP, FoundServer, parse_discovery
from tui.sources.host import Host

# For each `sglang::` process (argv[0] up to its NUL), walk up the parents while they are `sglang::` too.
DISCOVER_COMMAND = (
    "for f in $(grep -lsz -- '^sglang::' /proc/[0-9]*/cmdline 2>/dev/null); do p=${f#/proc/}; p=${p%/cmdline}; m=$p\n"
    "  while :; do pp=$(sed 's/^.*) //' /proc/$m/stat 2>/dev/null | cut -d' ' -f2)\n"
    '    [ -n "$pp" ] && [ "$pp" -gt 1 ] || break\n'
    "    m=$pp; grep -qsz -- '^sglang::' /proc/$pp/cmdline || break; done\n"
    '  echo "$m"\n'
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
