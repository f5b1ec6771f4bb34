"""Which loopback address reaches a server on this machine: its own module, so a caller that runs no event loop
(`probe local`, tui/sources/now.py) gets it without loading LocalHost's asyncio."""

from __future__ import annotations


def loopback_for(port: int, proc_net: str = "/proc/net") -> str:
    """`127.0.0.1`, or `[::1]` when only IPv6 listens on PORT here (SGLang's `--host ::1`). Read from the
    kernel's socket tables, so choosing costs the server no connection; IPv4 first, as a server that listens on
    both gets it, and where the tables cannot be read (not Linux)."""
    hex_port = f"{port:04X}"

    def listens(table: str) -> bool:
        try:
            with open(f"{proc_net}/{table}", encoding="ascii", errors="replace") as f:
                rows = [line.split() for line in f.readlines()[1:]]
        except OSError:
            return False
        return any(len(r) > 3 and r[3] == "0A" and r[1].rsplit(":", 1)[-1] == hex_port for r in rows)

    return "[::1]" if not listens("tcp") and listens("tcp6") else "127.0.0.1"
