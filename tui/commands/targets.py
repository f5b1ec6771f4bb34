"""TARGET as `probe`, `export` and `fleet` take it: one server, named wherever a HOST goes (DESIGN.md, second round).

    HOST                 user@host, an ~/.ssh/config alias, or `local`; its port and log from --port / --log
    HOST:PORT            that port on HOST (--log, when given, is its log)
    HOST:PORT:LOG        …and its log (an absolute path)
    HOST:/abs/log        the log on HOST, the port from --port
    [v6addr]:PORT[:LOG]  an IPv6 address in brackets

The one place a target's text is read for these commands. `fleet` and `export` read Slurm's forms too (job_target):
`slurm:JOBID`, `slurm:`, `LOGIN/slurm:JOBID` and `[LOGIN/]srt:LOGDIR` are Slurm jobs, each one server of its
nodes (or its srtctl workers); `probe` does not reach into a job yet. `fleet` reads one more (fleet_target): a bare
HOST (no port, no log anywhere) is every SGLang server found running there.
ValueError carries one line for the user. Read once, by tui/commands/options.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tui.core.jobtargets import is_slurm_target, is_srt_target
from tui.core.record import Record, record

if TYPE_CHECKING:  # read only for a job's target: a probe (one server, exec'd each period) loads neither module
    from tui.core.slurmjob import SlurmTarget

DEFAULT_PORT = 30000


@record
class ServerTarget(Record):
    """One TARGET, read: the host to reach and the server's port and log there."""

    name: str  # as typed: the `server` label of its metrics, the memo's key
    host: str  # what make_host takes (user@host, alias, local)
    port: int
    log: str | None


def parse_target(text: str, *, port: int | None = None, log: str | None = None) -> ServerTarget:
    """One TARGET; `port` and `log` are the command line's --port / --log (used where the target names none)."""
    if not text or text.strip() != text:
        raise ValueError(f"target {text!r}: give HOST, HOST:PORT or HOST:PORT:LOG")
    if is_job_target(text):  # Slurm's forms (issues 24, 36): fleet and export read them with job_target
        raise ValueError(f"target {text}: Slurm jobs are not a target of this command yet; give HOST:PORT[:LOG]")
    host, rest = _split_host(text)
    found_port, found_log = port, log
    if rest is not None:
        head, sep, tail = rest.partition(":")
        if head.startswith("/"):
            found_log = rest
        elif head.isdigit():
            found_port = int(head)
            if sep:
                if not tail.startswith("/"):
                    raise ValueError(f"target {text}: the log after the port must be an absolute path")
                found_log = tail
        else:
            raise ValueError(f"target {text}: after {host}: comes a port or an absolute log path")
    final_port = DEFAULT_PORT if found_port is None else found_port
    if not 0 < final_port < 65536:
        raise ValueError(f"target {text}: port {final_port} is not a TCP port (1-65535)")
    return ServerTarget(text, host, final_port, found_log)


def parse_listen(text: str) -> tuple[str, int]:
    """export's --listen ADDR as HOST:PORT, [V6]:PORT, :PORT (every interface) or PORT; ValueError with one line."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"--listen {text}: give HOST:PORT, :PORT or PORT (e.g. :9464)")
    return host or "0.0.0.0", int(port)


@record
class HostTarget(Record):
    """A bare HOST on the fleet's command line: every SGLang server found running there (tui.core.discovery)."""

    name: str
    host: str


@record
class JobTarget(Record):
    """A Slurm target: one job (`slurm:JOBID`, `LOGIN/slurm:JOBID`) or every running SGLang job (`slurm:`)."""

    name: str
    slurm: SlurmTarget
    port: int | None = None  # the server's port in the job (None: found on node 0, else 30000)
    srt: str | None = None  # an srtctl job (`[LOGIN/]srt:LOGDIR`, as written): its workers are the members


FleetTarget = ServerTarget | HostTarget | JobTarget


def fleet_target(text: str, *, port: int | None = None, log: str | None = None) -> FleetTarget:
    """One of `fleet`'s TARGETs: a Slurm job, a bare HOST (discovered, when neither --port nor --log is given), or one
    server as parse_target reads it. ValueError with one line."""
    if is_job_target(text):
        return job_target(text, port=port, log=log)
    if text and text.strip() == text and port is None and log is None and _split_host(text)[1] is None:
        return HostTarget(text, _split_host(text)[0])
    return parse_target(text, port=port, log=log)


def is_job_target(text: str) -> bool:
    """`slurm:…` or `srt:…` (either through a login node): a Slurm job, read by job_target."""
    return is_slurm_target(text) or is_srt_target(text)


def job_target(text: str, *, port: int | None = None, log: str | None = None) -> JobTarget:
    """A Slurm job as `fleet` and `export` take it (is_job_target(text) is true); ValueError with one line."""
    from tui.core.slurmjob import SlurmTarget
    from tui.core.slurmjob import parse_target as parse_slurm_target
    from tui.core.srtlayout import parse_target as parse_srt_target

    if is_srt_target(text):
        where = parse_srt_target(text)  # SrtTargetError is a ValueError
        return JobTarget(text, SlurmTarget(None, where.login), port, srt=str(where))
    job = parse_slurm_target(text)  # SlurmTargetError is a ValueError
    if log is not None and job.log is None:
        job = replace(job, log=log)  # every node's log pattern, as --log is for `wait slurm:JOBID`
    return JobTarget(text, job, port)


def _split_host(text: str) -> tuple[str, str | None]:
    """(host, what follows its colon or None); `[::1]:8000` keeps the brackets' address whole."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"target {text}: an unclosed [ in the host")
        host, after = text[1:end], text[end + 1 :]
        if after and not after.startswith(":"):
            raise ValueError(f"target {text}: after ] comes :PORT")
        return host, after[1:] if after else None
    host, sep, rest = text.partition(":")
    if not host:
        raise ValueError(f"target {text}: no host before the colon")
    return host, rest if sep else None
