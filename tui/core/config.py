"""The command line's options for one watched server, as a frozen value (built in tui/commands/config.py).

The layers below the commands (tui/sources: the Session, the process watch and control) take this, never an
argparse Namespace. Pure: a dataclass only."""

from __future__ import annotations

from dataclasses import dataclass

from tui.core.state import Readiness


@dataclass(frozen=True)
class WatchConfig:
    """What the command line says of one watched server: where it is, how to watch it, and whether the tool
    may act on it (read_only: no ServerControl is built)."""

    port: int
    log: str | None = None
    remote_python: str = "python3"
    sim_gpus: str | None = None
    launch: str | None = None
    cwd: str | None = None
    read_only: bool = False
    health: bool = True
    stall_after: float | None = None

    def first_state(self, initial: Readiness | None = None) -> Readiness:
        """The state a watch starts from: the facts its watcher sets once (whether /health is probed and on
        which port, whether a log is tailed, that the processes are watched, the --stall-after override)."""
        start = (initial if initial is not None else Readiness()).evolve(
            health_probed=self.health,
            health_port=self.port,
            log_watched=bool(self.log),
            process_watched=True,
        )
        return start if self.stall_after is None else start.evolve(stall_after=self.stall_after)
