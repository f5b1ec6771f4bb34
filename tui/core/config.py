"""The command line's options for the servers a command reaches, as frozen values (built once from argv by
tui/commands/options.py, then given new values by the settings and by discovery, never changed in place).

The layers below the commands (tui/sources: the Session, the process watch and control, `make_host`) take these,
never an argparse Namespace. Pure: dataclasses only."""

from __future__ import annotations

from tui.core.jobtargets import is_slurm_target, is_srt_target
from tui.core.record import Record, record
from tui.core.state import Readiness


@record
class Ssh(Record):
    """The SSH options the command line gave (None: from ~/.ssh/config or SSH's defaults)."""

    port: int | None = None
    user: str | None = None
    identity: str | None = None
    known_hosts: str | None = None
    config: str | None = None


@record
class HostSpec(Record):
    """Where to connect: `local`, or an SSH destination with its SSH options (`sources/connect.make_host`)."""

    host: str
    ssh: Ssh = Ssh()


@record
class Target(Record):
    """Which server a command reaches and how: its HOSTs (node 0 first) or a deployment file, over SSH."""

    hosts: tuple[str, ...]
    deployment: str | None = None
    ssh: Ssh = Ssh()
    port_named: bool = (
        True  # the port was typed or set in config.toml (not the built-in default): stop holds it to the log
    )
    discover: bool = False  # one HOST and neither --port nor --log (nor a setting): find the server running there

    @property
    def host(self) -> str:
        """The one HOST (node 0's with several; empty with only a deployment file, whose members name theirs)."""
        return self.hosts[0] if self.hosts else ""

    @property
    def several(self) -> bool:
        """A deployment: several HOSTs, or a deployment file."""
        return len(self.hosts) > 1 or self.deployment is not None

    @property
    def slurm(self) -> bool:
        """A Slurm job (`slurm:JOBID`, or an srtctl job's `srt:LOGDIR`), whose nodes Slurm names."""
        return is_slurm_target(self.host) or is_srt_target(self.host)

    def spec(self, host: str | None = None) -> HostSpec:
        """Where to connect: `host` (a member's, a login node's), else the one HOST, with the SSH options."""
        return HostSpec(self.host if host is None else host, self.ssh)


@record
class Hooks(Record):
    """--on-ready / --on-fail: commands run locally once, at the verdict."""

    on_ready: str | None = None
    on_fail: str | None = None

    def __bool__(self) -> bool:
        return bool(self.on_ready or self.on_fail)


@record
class WatchConfig(Record):
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
            launch_command=self.launch,
        )
        return start if self.stall_after is None else start.evolve(stall_after=self.stall_after)
