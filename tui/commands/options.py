"""The command line as one frozen value per command, built once from argparse's Namespace by `from_namespace` (the
one place that reads it). The settings fill what the command line did not say, and discovery (find_server) gives
a new value: nothing changes one in place, and nothing below the commands sees argparse."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tui.commands.probe_options import OptionsError as OptionsError  # re-exported: still importable from here
from tui.commands.probe_options import ProbeOptions as ProbeOptions  # re-exported: still importable from here
from tui.commands.probe_options import history_of as _history
from tui.commands.probe_options import probe_options
from tui.commands.probe_options import ssh_of as _ssh
from tui.commands.targets import JobTarget, ServerTarget, is_job_target, job_target, parse_listen, parse_target
from tui.core.config import Hooks, Ssh, Target, WatchConfig
from tui.core.discovery import DEFAULT_PORT
from tui.core.jobtargets import is_slurm_target, is_srt_target
from tui.core.settings import Given, Settings

if TYPE_CHECKING:  # the simulator's module only for demo and simulate (a probe exec'd each period loads none)
    from tui.sim.params import SimParams


@dataclass(frozen=True)
class WatchOptions:
    """`sglang-tui HOST …`: the TUI."""

    target: Target
    server: WatchConfig
    hooks: Hooks = Hooks()
    history: Path | None = None
    settings: Settings = Settings()  # the keys and the theme
    demo: bool = False  # the demo's simulated server: quitting stops it, and the help says so


@dataclass(frozen=True)
class WaitOptions:
    """`sglang-tui wait HOST …`: headless, until the verdict."""

    target: Target
    server: WatchConfig
    hooks: Hooks = Hooks()
    history: Path | None = None
    timeout: float | None = None
    json: bool = False
    dump_on_stall: bool = False
    stop_on_fail: bool = False
    missing_log_grace: float = 30.0  # exit 6 when nothing of the server is found for this long


@dataclass(frozen=True)
class StopOptions:
    """`sglang-tui stop HOST …`: terminate (or kill), then confirm."""

    target: Target
    server: WatchConfig  # the port, the log, the remote python for the GPU check
    force: bool = False
    grace: float = 30.0
    cancel_job: bool = False  # slurm: scancel even when something else still runs in the job


@dataclass(frozen=True)
class DumpOptions:
    """`sglang-tui dump HOST …`: py-spy every process of the server."""

    target: Target
    server: WatchConfig
    json: bool = False
    out: str | None = None
    member: str | None = None  # slurm:, srt: targets: the member (node1, decode0) whose processes are dumped


@dataclass(frozen=True)
class BenchOptions:
    """`sglang-tui bench HOST …`: measure a ready server (the plan is built from these, with the prompts file)."""

    target: Target
    server: WatchConfig
    history: Path | None = None
    requests: int = 16
    concurrency: int = 4
    max_tokens: int = 256
    prompts: str | None = None
    timeout: float = 300.0
    temperature: float = 0.0
    json: bool = False


@dataclass(frozen=True)
class ExportOptions:
    """`sglang-tui export --listen ADDR TARGET…`: each TARGET's (or the deployment's) readiness as metrics."""

    target: Target  # the deployment file (and the SSH options); its hosts are the TARGETs' texts
    servers: tuple[ServerTarget, ...]  # the TARGETs, read (none with --deployment)
    watch: WatchConfig  # how each is watched (its port and log are each TARGET's own)
    listen: tuple[str, int] | None = None
    listen_text: str | None = None  # --listen as typed, for its error line
    textfile: str | None = None
    history: Path | None = None
    jobs: tuple[JobTarget, ...] = ()  # the TARGETs that are Slurm jobs (slurm:, srt:), watched as the board's rows


@dataclass(frozen=True)
class ReplayOptions:
    """`sglang-tui replay LOGFILE…`."""

    logfiles: tuple[str, ...]
    json: bool = False
    record: str | None = None  # --record HOST: the key's host
    history: Path | None = None


@dataclass(frozen=True)
class HistoryOptions:
    """`sglang-tui history [HOST]`."""

    host: str | None = None
    json: bool = False
    compare: tuple[int, int] | None = None
    limit: int = 20
    history: Path | None = None  # None: --no-history


@dataclass(frozen=True)
class DemoOptions:
    """`sglang-tui demo`."""

    speed: float = 10.0
    fault: str | None = None
    accept_len: str | None = None
    read_only: bool = False
    stall_after: float | None = None
    settings: Settings = Settings()
    fleet: bool = False  # --fleet: several simulated servers at once, on the fleet board


@dataclass(frozen=True)
class SimulateOptions:
    """`sglang-tui simulate`: the simulated server (params), or with --router a simulated PD router."""

    params: SimParams
    router: bool = False
    prefill: tuple[str, ...] = ()
    decode: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServerOptions:
    """One inventory server's own settings, over the command line's (None: the command line's, or SSH's)."""

    ssh_port: int | None = None
    user: str | None = None
    identity: str | None = None
    known_hosts: str | None = None
    remote_python: str | None = None
    launch: str | None = None  # what `r` (restart) starts it with; it needs the server's log
    cwd: str | None = None

    def ssh(self, given: Ssh) -> Ssh:
        """The SSH options for this server: its own where it names them, else the command line's."""
        return Ssh(
            port=self.ssh_port if self.ssh_port is not None else given.port,
            user=self.user if self.user is not None else given.user,
            identity=self.identity if self.identity is not None else given.identity,
            known_hosts=self.known_hosts if self.known_hosts is not None else given.known_hosts,
            config=given.config,
        )


@dataclass(frozen=True)
class FleetOptions:
    """`sglang-tui fleet [TARGET…]`: one board for many servers (each TARGET read by targets.fleet_target)."""

    targets: tuple[str, ...] = ()  # as typed, in order
    ssh: Ssh = Ssh()
    port: int | None = None  # --port (or a setting) for every TARGET that names none; None: found there, else 30000
    log: str | None = None
    remote_python: str = "python3"
    sim_gpus: str | None = None  # one simulator GPU state per server, comma-separated (tests)
    inventory: str | None = None
    once: bool = False
    json: bool = False
    timeout: float = 30.0
    read_only: bool = False
    health: bool = True
    stall_after: float | None = None
    history: Path | None = None
    settings: Settings = Settings()  # the keys of a row's full view
    servers: tuple[tuple[str, ServerOptions], ...] = ()  # the inventory's own settings, by server name

    def server(self, name: str) -> ServerOptions:
        return dict(self.servers).get(name, ServerOptions())

    @property
    def target(self) -> Target:
        """The SSH options as a Target, for the hosts each TARGET names (Target.spec)."""
        return Target(self.targets, ssh=self.ssh)


Options = (
    WatchOptions
    | WaitOptions
    | StopOptions
    | DumpOptions
    | BenchOptions
    | ProbeOptions
    | ExportOptions
    | ReplayOptions
    | HistoryOptions
    | DemoOptions
    | SimulateOptions
    | FleetOptions
)


def from_namespace(ns: argparse.Namespace, settings: Settings) -> Options:
    """The command's options: argparse's Namespace (the command line alone) with the settings under it; OptionsError
    when two cannot go together."""
    command = ns.command
    if command == "replay":
        return ReplayOptions(tuple(ns.logfile), json=ns.json, record=ns.record, history=_history(ns))
    if command == "history":
        compare = (ns.compare[0], ns.compare[1]) if ns.compare else None
        return HistoryOptions(ns.host, json=ns.json, compare=compare, limit=ns.limit, history=_history(ns))
    if command == "demo":
        return DemoOptions(ns.speed, ns.fault, ns.accept_len, ns.read_only, ns.stall_after, settings, ns.fleet)
    if command == "simulate":
        return SimulateOptions(_sim_params(ns), ns.router, tuple(ns.prefill), tuple(ns.decode))
    if command == "probe":
        return probe_options(ns, settings)
    if command == "export":
        return _export(ns, settings)
    if command == "fleet":
        return _fleet(ns, settings)
    target, server = _reached(ns, settings)
    if command == "stop":
        return StopOptions(target, server, force=ns.force, grace=ns.grace, cancel_job=ns.cancel_job)
    if command == "dump":
        if ns.member is not None and not target.slurm:
            raise OptionsError("--member names a member of a Slurm job (slurm:JOBID, srt:LOGDIR): give one")
        return DumpOptions(target, server, json=ns.json, out=ns.out, member=ns.member)
    if command == "bench":
        return BenchOptions(target, server, _history(ns), ns.requests, ns.concurrency, ns.max_tokens, ns.prompts,
                            ns.timeout, ns.temperature, ns.json)  # fmt: skip
    hooks = Hooks(ns.on_ready, ns.on_fail)
    if command == "watch":
        return WatchOptions(target, server, hooks, _history(ns), settings)
    return WaitOptions(target, server, hooks, _history(ns), ns.timeout, ns.json, ns.dump_on_stall, ns.stop_on_fail,
                       ns.missing_log_grace)  # fmt: skip


def _reached(ns: argparse.Namespace, settings: Settings) -> tuple[Target, WatchConfig]:
    """Where the command goes and what it watches there: the command line's port, log and remote python over the
    one HOST's settings, over [defaults], over the built-in defaults."""
    command = ns.command
    hosts = tuple(ns.host) if isinstance(ns.host, list) else (ns.host,)
    deployment: str | None = getattr(ns, "deployment", None)  # watch, wait and stop take one; dump and bench do not
    if not hosts and not deployment:
        raise OptionsError("give a HOST (or several, node 0 first), or --deployment FILE")
    launch: str | None = getattr(ns, "launch", None)  # watch and wait
    read_only = bool(getattr(ns, "read_only", False))
    problem = _slurm_problem(command, hosts, deployment, launch)
    if problem is not None:
        raise OptionsError(problem)
    if launch and read_only:  # read-only promises the server is never changed; a launch changes it
        raise OptionsError("--launch starts a server and --read-only never changes one; drop one of them")
    said = Given(port=ns.port, log=ns.log, remote_python=getattr(ns, "remote_python", None))
    given = said.over(settings.for_host(hosts[0] if len(hosts) == 1 else None))
    target = Target(
        hosts,
        deployment=deployment,
        ssh=_ssh(ns),
        port_named=given.port is not None,
        # neither --port nor --log nor a setting: watch/wait of one HOST find the server there
        discover=command in ("watch", "wait")
        and given.port is None
        and not given.log
        and len(hosts) == 1
        and not deployment
        and not launch,
    )
    server = WatchConfig(
        port=given.port if given.port is not None else DEFAULT_PORT,
        log=given.log,
        remote_python=given.remote_python or "python3",
        sim_gpus=getattr(ns, "sim_gpus", None),
        launch=launch,
        cwd=getattr(ns, "cwd", None),
        read_only=read_only,
        health=not getattr(ns, "no_health", False),
        stall_after=getattr(ns, "stall_after", None),
    )
    return target, server


def _export(ns: argparse.Namespace, settings: Settings) -> ExportOptions:
    if not ns.listen and not ns.textfile:
        raise OptionsError("give --listen ADDR (e.g. :9464) or --textfile DIR, or both")
    if ns.deployment and ns.host:
        raise OptionsError("give TARGETs or --deployment FILE, not both")
    if not ns.deployment and not ns.host:
        raise OptionsError(
            "give a TARGET (HOST, HOST:PORT[:LOG], slurm:JOBID, srt:LOGDIR) or several, or --deployment FILE"
        )
    one = ns.host[0] if len(ns.host) == 1 else None
    given = Given(port=ns.port, log=ns.log, remote_python=ns.remote_python).over(settings.for_host(one))
    try:
        listen = parse_listen(ns.listen) if ns.listen else None
        servers = tuple(parse_target(t, port=given.port, log=given.log) for t in ns.host if not is_job_target(t))
        jobs = tuple(job_target(t, port=given.port, log=given.log) for t in ns.host if is_job_target(t))
    except ValueError as err:
        raise OptionsError(str(err)) from None
    names = [t.name for t in servers] + [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise OptionsError("a TARGET is given twice")
    watch = WatchConfig(
        port=given.port if given.port is not None else DEFAULT_PORT,
        log=given.log,
        remote_python=given.remote_python or "python3",
        sim_gpus=ns.sim_gpus,
        read_only=True,  # export only watches
        health=not ns.no_health,
        stall_after=ns.stall_after,
    )
    target = Target(tuple(ns.host), deployment=ns.deployment, ssh=_ssh(ns))
    return ExportOptions(target, servers, watch, listen, ns.listen, ns.textfile, _history(ns), jobs)


def _fleet(ns: argparse.Namespace, settings: Settings) -> FleetOptions:
    targets = tuple(ns.host)
    if not targets and not ns.inventory:
        raise OptionsError("give TARGETs (HOST, HOST:PORT[:LOG], slurm:JOBID), or --inventory FILE.toml")
    said = Given(port=ns.port, log=ns.log, remote_python=ns.remote_python)
    given = said.over(settings.for_host(targets[0] if len(targets) == 1 else None))
    return FleetOptions(
        targets,
        _ssh(ns),
        port=given.port,
        log=given.log,
        remote_python=given.remote_python or "python3",
        sim_gpus=ns.sim_gpus,
        inventory=ns.inventory,
        once=ns.once,
        json=ns.json,
        timeout=ns.timeout,
        read_only=ns.read_only,
        health=not ns.no_health,
        stall_after=ns.stall_after,
        history=_history(ns),
        settings=settings,
    )


def _slurm_problem(command: str, hosts: tuple[str, ...], deployment: str | None, launch: str | None) -> str | None:
    """Why a `slurm:` target cannot go with the rest of the command line (None when it can)."""
    if not any(is_slurm_target(h) or is_srt_target(h) for h in hosts):
        return None
    if len(hosts) > 1 or deployment:
        return (
            "a slurm: target is a whole job (Slurm names its nodes): give it alone, without other HOSTs or --deployment"
        )
    if command == "bench":
        return f"{command} does not reach Slurm jobs yet: give a node's HOST (its sshd), or watch with wait slurm:JOBID"
    if launch:
        return "--launch starts a server itself; a Slurm job's server is started by its batch script (sbatch)"
    return None


def _accept_len(text: str | None) -> float | None:
    """`--accept-len X`: None when not given; 0 (or `none`) turns speculative decoding off."""
    if text is None:
        return None
    text = text.strip().lower()
    if text in ("none", "off", "0", "0.0"):
        return 0.0
    return float(text)  # argparse's type already checked it parses


def _sim_params(ns: argparse.Namespace) -> SimParams:
    from tui.sim.params import SimParams

    speculative = None if str(ns.speculative).lower() == "none" else str(ns.speculative).upper()
    accept = _accept_len(ns.accept_len)
    if accept == 0.0:
        speculative = None
    extra = {} if accept is None or accept == 0.0 else {"accept_len": accept}
    return SimParams(
        log=os.path.abspath(ns.log),
        port=ns.port,
        host=ns.host,
        tp=ns.tp,
        shards=ns.shards,
        speed=ns.speed,
        fault=ns.fault,
        fmt=ns.format,
        speculative=speculative,
        gpu_state=os.path.abspath(ns.gpu_state) if ns.gpu_state else None,
        traffic=ns.traffic,
        eplb_every=ns.eplb_every,
        seed=ns.seed,
        loader=ns.loader,
        slow=ns.slow,
        fault_seconds=ns.fault_seconds,
        backdate=ns.backdate,
        nnodes=ns.nnodes,
        node_rank=ns.node_rank,
        dist_init_addr=ns.dist_init_addr,
        disaggregation_mode=ns.disaggregation_mode,
        bootstrap_port=ns.disaggregation_bootstrap_port,
        mem_fraction_static=ns.mem_fraction_static,
        cuda_graph_max_bs=ns.cuda_graph_max_bs,
        forkserver=getattr(ns, "forkserver", None),
        **extra,
    )
