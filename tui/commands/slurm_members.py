"""`slurm:JOBID`, `slurm:` and `LOGIN/slurm:JOBID[:LOG]` as the members of a multi-node deployment: the job
read with Slurm's commands (here, or on the login node over SSH), one SrunHost per node (node 0 first),
each node's log from the job's StdOut or from the target's pattern.

What `wait` and `stop` share; exit codes as DESIGN.md's table: 2 a bad target, 4 the login node cannot be
reached, 6 no such running job (or none of yours runs SGLang).
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from tui.core import slurmjob as sj
from tui.core.answerer import printable
from tui.core.config import Target, WatchConfig
from tui.core.discovery import DEFAULT_PORT
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_CONNECT, EXIT_NOTHING, EXIT_TIMEOUT
from tui.core.srtlayout import is_srt_target
from tui.core.srtlayout import log_dir_of_stdout as srt_log_dir
from tui.sources.bounded import within
from tui.sources.connect import make_host
from tui.sources.deployment import MemberSpec
from tui.sources.discover import discover
from tui.sources.host import Host, HostError
from tui.sources.slurm import JobNodes, SlurmCli, SlurmError, SrunHost

_PROBE_CONCURRENCY = 4  # `slurm:`: jobs whose script does not say SGLang are looked into this many at a time


@dataclass
class SlurmMembers:
    """A resolved job: its nodes as deployment members, their hosts (one SrunHost each) and the base host."""

    target: sj.SlurmTarget
    job: JobNodes
    specs: list[MemberSpec]
    hosts: list[SrunHost]
    base: Host
    cli: SlurmCli
    notes: list[str] = field(default_factory=list)  # what was decided on the way (said by the command)
    owns_base: bool = True  # close() closes the base host too (else its opener does)
    shown: str = ""  # the target as the user wrote it, when it is no `slurm:` one (`srt:LOGDIR`)
    pending: str = ""  # an srtctl job's workers not all there, or not all on the port their logs name: what lacks
    srt_dir: str | None = None  # an srtctl job's log directory (its benchmark's word is read there)

    @property
    def job_id(self) -> str:
        return self.job.job.job_id

    async def close(self) -> None:
        await asyncio.gather(*(h.close() for h in self.hosts), return_exceptions=True)
        if self.owns_base:
            await self.base.close()


def node_logs(job: JobNodes, pattern: str | None) -> tuple[list[str | None], str]:
    """Each node's log (node 0 first) and one line saying where they come from. A pattern with %N, %n or %t
    names one file per node; any other (the batch script's StdOut by default) is one file for every node,
    read by node 0 (the other nodes follow node 0's log: tui/core/deployment.follows_head)."""
    nodes = job.nodes
    if pattern:
        if sj.per_node(pattern):
            logs: list[str | None] = [
                sj.node_log(pattern, job.job, i, job.hostnames.get(n, n)) for i, n in enumerate(nodes)
            ]
            return logs, f"logs: {pattern} on each node ({logs[0]}, …)"
        one = sj.node_log(pattern, job.job, 0, job.hostnames.get(nodes[0], nodes[0]) if nodes else "")
        return [one, *([None] * (len(nodes) - 1))], f"log: {one} (every node's, read on {nodes[0] if nodes else '?'})"
    if not job.job.std_out:
        return [None] * len(nodes), "no log: the job has no StdOut (an allocation, not a batch job): give --log"
    head = job.job.batch_host or (nodes[0] if nodes else "")
    one = sj.batch_log(job.job, job.hostnames.get(head, head))
    return [one, *([None] * (len(nodes) - 1))], f"log: {one} (the batch script's output, every node's)"


async def _runs_sglang(cli: SlurmCli, base: Host, job: sj.SlurmJob, remote_python: str) -> bool:
    """Whether the job runs SGLang: its command or batch script says so, else an `sglang::` process of the
    job on its first node (one short srun)."""
    if sj.mentions_sglang(job.command) or sj.mentions_sglang(await cli.batch_script(job.job_id)):
        return True
    nodes = await cli.hostnames(job.node_list) if job.node_list else ()
    if not nodes:
        return False
    host = SrunHost(base, job.job_id, nodes[0], remote_python=remote_python)
    entry = shlex.quote(f"SLURM_JOB_ID={job.job_id}")
    try:
        result = await host.run(
            f"for f in $(grep -l -a -z -x -F -e {entry} /proc/[0-9]*/environ 2>/dev/null); do "
            'd=${f%/environ}; head -c 8 "$d/cmdline" 2>/dev/null; echo; done',
            timeout=30,
        )
    except (HostError, TimeoutError):
        return False
    finally:
        await host.close()
    return any(line.startswith("sglang::") for line in result.stdout.decode("utf-8", "replace").splitlines())


async def sglang_jobs(where: Target, server: WatchConfig, say: Callable[[str], None]) -> tuple[str, ...] | int:
    """`slurm:` for the fleet: every running job of the user that runs SGLang (their ids), else the exit code
    after one line (6: none; 4: the login node or Slurm cannot be reached)."""
    target = sj.parse_target(where.host)
    base = make_host(where.spec(target.login or "local"))
    try:
        try:
            await base.connect()
        except HostError as exc:
            say(f"cannot connect to the login node {target.login}: {exc}")
            return EXIT_CONNECT
        try:
            found, jobs = await _sglang_jobs(SlurmCli(base), base, server.remote_python)
        except SlurmError as exc:
            say(str(exc))
            return EXIT_CONNECT
    finally:
        await base.close()
    if not found:
        say(_none_found(jobs))
        return EXIT_NOTHING
    return tuple(j.job_id for j in found)


async def _sglang_jobs(cli: SlurmCli, base: Host, remote_python: str) -> tuple[list[sj.SlurmJob], list[sj.SlurmJob]]:
    """(the running jobs of the user that run SGLang, every running job of the user)."""
    ids = await cli.running_jobs()
    jobs = [j for j in await asyncio.gather(*(cli.job(i) for i in ids)) if j is not None]
    gate = asyncio.Semaphore(_PROBE_CONCURRENCY)

    async def check(job: sj.SlurmJob) -> bool:
        async with gate:
            return await _runs_sglang(cli, base, job, remote_python)

    flags = await asyncio.gather(*(check(j) for j in jobs))
    return [j for j, ok in zip(jobs, flags, strict=True) if ok], jobs


def _none_found(jobs: list[sj.SlurmJob]) -> str:
    running = f" ({len(jobs)} running job{'s' if len(jobs) != 1 else ''} of yours, none runs SGLang)" if jobs else ""
    return f"no running Slurm job of yours runs SGLang{running}: nothing to watch"


async def _pick_job(cli: SlurmCli, base: Host, remote_python: str, say: Callable[[str], None]) -> str | int:
    """`slurm:`: the one running job of the user that runs SGLang (its id), else the exit code after a line."""
    found, jobs = await _sglang_jobs(cli, base, remote_python)
    if not found:
        say(_none_found(jobs))
        return EXIT_NOTHING
    if len(found) > 1:
        listed = ", ".join(f"slurm:{j.job_id} ({j.name}, {j.node_list})" for j in found)
        say(f"{len(found)} running Slurm jobs run SGLang: name one ({listed})")
        return EXIT_BAD_ARGS
    return found[0].job_id


@dataclass
class OpenJob:
    """A job the HOST names, Slurm's commands reached (here, or on the login node: `base`, connected)."""

    target: sj.SlurmTarget
    job_id: str
    base: Host
    cli: SlurmCli
    srt_dir: str | None = None  # an srtctl job (`srt:LOGDIR`): its log directory, whose workers are the members
    shown: str = ""  # the target as the user wrote it (for the lines that name it)


async def open_job(target: Target, server: WatchConfig, say: Callable[[str], None]) -> OpenJob | int:
    """Parse the HOST, connect to where Slurm's commands are, pick the job (`slurm:`: the one running SGLang) and
    check Slurm knows it; else the exit code after one line was said (2, 4, 6)."""
    if is_srt_target(target.host):
        from tui.commands import srt_members

        opened_srt = await srt_members.open_srt(target, server, say)
        if isinstance(opened_srt, int):
            return opened_srt
        where, job_id, base, cli = opened_srt
        return OpenJob(sj.SlurmTarget(job_id, where.login), job_id, base, cli, srt_dir=where.log_dir, shown=str(where))
    try:
        job_target = sj.parse_target(target.host)
    except sj.SlurmTargetError as err:
        say(str(err))
        return EXIT_BAD_ARGS
    base = make_host(target.spec(job_target.login or "local"))
    try:
        found = await _open(server, job_target, base, say)
    except BaseException:
        await base.close()
        raise
    if isinstance(found, int):
        await base.close()
    return found


async def _open(server: WatchConfig, target: sj.SlurmTarget, base: Host, say: Callable[[str], None]) -> OpenJob | int:
    try:
        await base.connect()
    except HostError as exc:
        say(f"cannot connect to the login node {target.login}: {exc}")
        return EXIT_CONNECT
    cli = SlurmCli(base)
    try:
        job_id = target.job_id or await _pick_job(cli, base, server.remote_python, say)
    except SlurmError as exc:
        say(str(exc))
        return EXIT_CONNECT
    if isinstance(job_id, int):
        return job_id
    return OpenJob(target, job_id, base, cli)


async def resolve(
    target: Target, server: WatchConfig, say: Callable[[str], None], *, wait_for_workers: bool = False
) -> SlurmMembers | int:
    """The job the HOST names as members and connected-on-use hosts, or the exit code after one line was said.
    `wait_for_workers`: an srtctl job's workers are waited for as `wait` waits for them (members_of)."""
    opened = await open_job(target, server, say)
    if isinstance(opened, int):
        return opened
    try:
        found = await members_of(opened, server, target.discover, say, wait_for_workers=wait_for_workers)
    except BaseException:
        await opened.base.close()
        raise
    if isinstance(found, int):
        await opened.base.close()
    return found


async def members_of(
    opened: OpenJob,
    server: WatchConfig,
    discover: bool,
    say: Callable[[str], None],
    *,
    owns_base: bool = True,
    wait_for_workers: bool = True,
) -> SlurmMembers | int:
    """The running job's nodes as members (one SrunHost each), or the exit code after one line (6: no such job,
    or not running). `owns_base`: the members close the base host with theirs. An srtctl job's members are its
    workers (tui/commands/srt_members.py), waited for until the recipe's count is there (`wait_for_workers`)."""
    target, job_id, base, cli = opened.target, opened.job_id, opened.base, opened.cli
    try:
        job = await cli.job(job_id)
        if job is None:
            say(f"no Slurm job {job_id}" + (f" on {target.login}" if target.login else "") + ": nothing to watch")
            return EXIT_NOTHING
        if not job.running:
            why = f" ({job.reason})" if job.reason else ""
            say(f"slurm job {job_id} is {job.state or 'not running'}{why}: nothing runs in it now")
            return EXIT_NOTHING
        pattern = target.log or server.log
        nodes = await cli.job_nodes(job, hostnames="%N" in (pattern or job.std_out))
    except SlurmError as exc:
        say(str(exc))
        return EXIT_CONNECT
    if not nodes.nodes:
        say(f"slurm job {job_id} has no nodes yet: nothing runs in it now")
        return EXIT_NOTHING
    srt_dir = opened.srt_dir or (srt_log_dir(job.std_out) if not target.log and not server.log else None)
    if srt_dir is not None:  # `srt:LOGDIR`, or a job whose StdOut is srtctl's sweep log: its workers are members
        from tui.commands import srt_members

        found = await srt_members.members(
            base, cli, job, nodes, srt_dir, server, say, wait_for_workers=wait_for_workers
        )
        if isinstance(found, int):
            return found
        specs, srt_hosts, line, pending = found
        return SlurmMembers(target, nodes, specs, srt_hosts, base, cli, [line], owns_base=owns_base,
                            shown=opened.shown, pending=pending, srt_dir=srt_dir)  # fmt: skip
    gpus = sj.gpus_per_node(job.tres_per_node)
    hosts = [SrunHost(base, job_id, n, remote_python=server.remote_python, gpus=gpus) for n in nodes.nodes]
    logs, where = node_logs(nodes, pattern)
    sims = server.sim_gpus.split(",") if server.sim_gpus else []
    specs = [
        MemberSpec(f"node{i}", "node", n, server.port, logs[i], i,
                   sim_gpus=(sims[i] if i < len(sims) else sims[-1]) if sims else None)
        for i, n in enumerate(nodes.nodes)
    ]  # fmt: skip
    members = SlurmMembers(target, nodes, specs, hosts, base, cli, [where], owns_base=owns_base)
    if discover:
        members.notes.append(await _find_port(members))
    return members


async def _find_port(members: SlurmMembers) -> str:
    """No --port: the port of the SGLang server on node 0 (its argv), else SGLang's default."""
    try:
        found = await discover(members.hosts[0])
    except (HostError, TimeoutError, OSError) as err:
        return f"cannot look for the server's port on {members.specs[0].host} ({err}): watching port {DEFAULT_PORT}"
    ports = sorted({s.port for s in found})
    if len(ports) != 1:
        return f"port: {DEFAULT_PORT} (give --port: {len(ports)} SGLang ports found on {members.specs[0].host})"
    for spec in members.specs:
        spec.port = ports[0]
    return f"port: {ports[0]} (the SGLang server's on {members.specs[0].host})"


async def with_job(
    target: Target,
    server: WatchConfig,
    say: Callable[[str], None],
    body: Callable[[SlurmMembers], Awaitable[int]],
    *,
    timeout: float | None = None,
    notes: bool = True,
    wait_for_workers: bool = False,
) -> int:
    """Resolve the job (resolve), say what was decided (where the logs are: `notes`), run `body` on it, close
    every host; body's exit code or resolve's (EXIT_TIMEOUT when `timeout` runs out first). Every line said is
    made printable: job names and paths come from the cluster."""

    def clean(line: str) -> None:
        say(printable(line, 600))

    try:
        found = await within(resolve(target, server, clean, wait_for_workers=wait_for_workers), timeout)
    except asyncio.TimeoutError:
        clean(f"timed out reading the Slurm job {target.host}")
        return EXIT_TIMEOUT
    if isinstance(found, int):
        return found
    for note in found.notes if notes else ():
        clean(note)
    try:
        return await body(found)
    finally:
        await found.close()
