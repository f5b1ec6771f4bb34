"""What every demo launches with (`demo`, `demo --fleet`): the simulator's command line, a free port, the stall limit
scaled by --speed, the tree the launch runs in."""

from __future__ import annotations

import socket
from pathlib import Path

import tui
from tui.commands.simulate import command_line

PROJECT_ROOT = str(Path(tui.__file__).resolve().parent.parent)  # the launch runs here, so `-m tui` imports this tree
DEMO_TRAFFIC = 20  # background requests per simulated minute once ready, so the decode figures move
#: With no --stall-after, the demo calls a silence a stall after this many *simulated* seconds (divided by --speed):
#: the simulated startup has no silent stretch this long, and a hang fault shows as STALLED in 30 s at speed 10
#: instead of the real per-phase limits (3-20 minutes of wall clock, whatever the speed).
SIM_STALL_S = 5 * 60.0


def demo_stall_after(speed: float, stall_after: float | None) -> float:
    """The stall limit the demo watches with, in real seconds: --stall-after as given, else scaled by --speed."""
    return stall_after if stall_after is not None else SIM_STALL_S / speed


def free_port() -> int:
    """A TCP port nothing listens on now (the simulator binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def simulate_command(
    *,
    log: Path,
    port: int,
    gpu_dir: Path,
    speed: float,
    fault: str | None,
    accept_len: str | None = None,
    variation: list[str] | None = None,
) -> str:
    """The `--launch` command line that starts the demo's simulator (every word quoted)."""
    options = ["--speed", f"{speed:g}", "--traffic", str(DEMO_TRAFFIC), *(variation or [])]
    if fault:
        options += ["--fault", fault]
    if accept_len is not None:
        options += ["--accept-len", accept_len]
    return command_line(log, port, gpu_dir, *options)
