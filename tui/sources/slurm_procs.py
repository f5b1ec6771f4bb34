"""The server's processes on one node of a Slurm job: found among the job's own processes, then watched and
stopped as every other server is (tui/sources/procwatch.py, control.py: its group, its descendants, never a
process by name).

On a compute node the usual evidence misleads: the job's log is written by slurmstepd or by the batch
script's srun, not by the server, and the node's share of a multi-node server listens on no port. So the
find lists the job's processes (SLURM_JOB_ID=J in /proc/PID/environ, on this node: SLURMD_NODENAME) with
their step, and the server is the first ancestor that is no `sglang::` process of the job's `sglang::`
processes (or of the port's listener): `python -m sglang.launch_server` as srun's task, or as the batch
script's child. The batch script itself, and srun clients, are never the server. Our own processes carry no
SLURM_JOB_ID (tui/sources/slurm.py takes it out of the agent's environment).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from tui.core.events import ServerProcess
from tui.core.record import record
from tui.core.slurmjob import mentions_sglang
from tui.sources import control_cmds as cmds
from tui.sources.control import ServerControl
from tui.sources.control_cmds import FindResult, Proc
from tui.sources.host import Host
from tui.sources.procwatch import ProcessWatch, _Target

q = shlex.quote
BATCH = "batch"  # the step of a process of the batch script (no SLURM_STEP_ID in its environment)


def job_procs_command(job_id: str) -> str:
    """For each process of the job on this machine: `J PID STEP NODE`, `S PID state ppid pgid sid start`,
    `C PID cmdline`. Run inside the job's allocation (an srun step), it keeps only the processes of its own
    cluster (SLURM_CLUSTER_NAME): job ids are per cluster, and a machine may serve two (test clusters do)."""
    entry = q(f"SLURM_JOB_ID={job_id}")
    return f"""for p in $(grep -l -a -z -x -F -e {entry} /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
  [ -n "$SLURM_CLUSTER_NAME" ] && ! grep -q -a -z -x -F -e "SLURM_CLUSTER_NAME=$SLURM_CLUSTER_NAME" \
    /proc/$p/environ 2>/dev/null && continue
  s=$({cmds._STAT_FIELDS}) && [ -n "$s" ] || continue
  e=$(tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -E '^(SLURM_STEP_ID|SLURMD_NODENAME)=')
  st=$(printf '%s\\n' "$e" | sed -n 's/^SLURM_STEP_ID=//p' | head -n 1)
  nd=$(printf '%s\\n' "$e" | sed -n 's/^SLURMD_NODENAME=//p' | head -n 1)
  echo "J $p ${{st:-{BATCH}}} ${{nd:--}}"; echo "S $p $s"
  {cmds._CMDLINE_LINE}
done"""


def find_command(port: int | None, job_id: str) -> str:
    """The usual find (the port's listeners, what this uid can see) without the log's writers, and the job's
    processes (job_procs_command)."""
    return f"{cmds.find_command(port, None)}\n{job_procs_command(job_id)}"


@dataclass(frozen=True)
class JobProc:
    proc: Proc
    step: str  # SLURM_STEP_ID, or `batch`
    node: str  # SLURMD_NODENAME ("" when unset)
    cmdline: str

    @property
    def titled(self) -> bool:
        return self.cmdline.startswith("sglang::")


@record
class SlurmFound(FindResult):
    """A find on a node of the job: FindResult's facts, and the job's processes on this node."""

    job: dict[int, JobProc] = field(default_factory=dict)


def parse_job_procs(text: str, node: str | None = None) -> dict[int, JobProc]:
    """The `J`, `S` and `C` lines as pid -> JobProc, only this node's (a process whose SLURMD_NODENAME names
    another node runs elsewhere: on a test cluster, every node is the same machine)."""
    steps: dict[int, tuple[str, str]] = {}
    stats: dict[int, Proc] = {}
    names: dict[int, str] = {}
    for line in text.splitlines():
        if cmds._cmdline_line(line, names):
            continue
        f = line.split()
        if len(f) == 4 and f[0] == "J" and f[1].isdigit():
            steps[int(f[1])] = (f[2], "" if f[3] == "-" else f[3])
        elif len(f) == 7 and f[0] == "S" and f[1].isdigit():
            try:
                pid, (state, ppid, pgid, sid, start) = int(f[1]), f[2:]
                stats[pid] = Proc(pid, int(ppid), int(pgid), int(sid), state, int(start), names.get(pid, ""))
            except ValueError:
                continue
    out = {}
    for pid, (step, where) in steps.items():
        proc = stats.get(pid)
        if proc is None or (node and where and where != node):
            continue
        name = names.get(pid, proc.name)
        out[pid] = JobProc(Proc(**{**proc.__dict__, "name": name}), step, where, name)
    return out


def _root(pid: int, job: dict[int, JobProc]) -> int:
    """The first ancestor of pid (itself included) that is no `sglang::` process, among the job's."""
    seen: set[int] = set()
    while job[pid].titled and job[pid].proc.ppid in job and pid not in seen:
        seen.add(pid)
        pid = job[pid].proc.ppid
    return pid


def _descendants(root: int, job: dict[int, JobProc]) -> set[int]:
    members = {root}
    grew = True
    while grew:
        grew = False
        for pid, jp in job.items():
            if pid not in members and jp.proc.ppid in members:
                members.add(pid)
                grew = True
    return members


_PORT_ARG = re.compile(r"(?:^|\s)--port(?:=|\s+)(\d+)(?:\s|$)")


def argv_port(cmdline: str) -> int | None:
    """The `--port N` a command line names (SGLang's launch, every node of it), None when it names none."""
    found = _PORT_ARG.search(cmdline)
    return int(found.group(1)) if found else None


def server_target(found: SlurmFound, job_id: str, node: str, port: int | None = None) -> _Target | None:
    """The server among the job's processes on this node (None: no SGLang process of the job runs here)."""
    live = {pid: jp for pid, jp in found.job.items() if jp.proc.alive}
    listeners = [pid for pid in found.port_pids if pid in live]
    titled = [pid for pid, jp in live.items() if jp.titled]
    roots = {_root(pid, live) for pid in listeners or titled}
    if (port is not None and len(roots) > 1) or not listeners:
        # Several servers of one job on one node (or a node that serves no port): the one whose command line
        # names the port; a server whose command line names another port is never this one.
        named = {pid: argv_port(live[pid].cmdline) for pid in roots}
        if port is not None:
            roots = {pid for pid in roots if named[pid] == port} or {pid for pid in roots if named[pid] is None}
    if not roots:
        return None
    # Still several: the oldest.
    main = min((live[pid].proc for pid in roots), key=lambda p: (p.start, p.pid))
    members = _descendants(main.pid, live)
    if live[main.pid].titled:  # its launcher is gone (re-parented schedulers): those of its group are the server
        members |= {pid for pid, jp in live.items() if jp.titled and jp.proc.pgid == main.pgid}
    step = live[main.pid].step
    where = f"step {step}" if step != BATCH else "the batch script"
    return _Target(
        main=main.pid,
        group=main.pgid if main.pgid == main.pid or live[main.pid].titled else None,
        session=main.pid if main.sid == main.pid else None,
        known={pid: live[pid].proc.start for pid in members},
        names={pid: live[pid].cmdline for pid in members},
        how=f"slurm job {job_id} ({where}) on {node}",
    )


def unclaimed_ports(found: SlurmFound, port: int | None) -> list[int | None]:
    """The ports the job's SGLang servers on this node name (None: one that names none), when server_target finds
    none of them to be the one on `port`: processes the look saw but could not tell this server's from (a
    worker whose port was taken before its log named it). Empty when the port names nothing, or no SGLang
    process of the job runs here."""
    if port is None:
        return []
    live = {pid: jp for pid, jp in found.job.items() if jp.proc.alive}
    roots = {_root(pid, live) for pid, jp in live.items() if jp.titled}
    return sorted({argv_port(live[pid].cmdline) for pid in roots}, key=lambda p: (p is None, p or 0))


def batch_roots(found: SlurmFound) -> dict[int, int]:
    """The batch script's own processes at the top of the batch step (pid -> start): what ends the job when it
    exits. (The server, when the script started it itself, is its child, never one of these.)"""
    job = found.job
    return {
        pid: jp.proc.start
        for pid, jp in job.items()
        if jp.step == BATCH and jp.proc.alive and not jp.titled and (jp.proc.ppid not in job)
    }


def still_running(found: SlurmFound) -> list[JobProc]:
    """What still runs in the job on this node besides the batch script: any SGLang process (its `sglang::`
    titles, or a command line that runs SGLang), and any process of a step the user started (an srun step:
    another server, a benchmark, a router). The batch script's own processes (and a `sleep` it waits in), the
    srun clients it runs, and the job's external step are not counted: they end with the job."""
    job = found.job
    roots = batch_roots(found)
    out = []
    for pid, jp in sorted(job.items()):
        if not jp.proc.alive or pid in roots:
            continue
        words = jp.cmdline.split()
        program = words[0].rsplit("/", 1)[-1] if words else ""
        if program == "srun" or jp.step == "extern" or (jp.step == BATCH and program in ("sleep", "wait")):
            continue
        if jp.titled or mentions_sglang(jp.cmdline) or jp.step != BATCH:
            out.append(jp)
    return out


class SlurmFind:
    """The Slurm job's way of finding the server (mixed into ProcessWatch and ServerControl)."""

    job_id: str
    node: str
    port: int | None
    _last_find: FindResult | None

    def _find_command(self) -> str:
        return find_command(self.port, self.job_id)

    def _parse_find(self, text: str) -> FindResult:
        base = cmds.parse_find(text)
        return SlurmFound(**base.__dict__, job=parse_job_procs(text, self.node))

    def _target_from(self, found: FindResult) -> _Target | None:
        self._last_find = found
        if not isinstance(found, SlurmFound):
            return None
        return server_target(found, self.job_id, self.node, self.port)

    def _not_found(self) -> ServerProcess:
        """None of the job's processes on this node is the server. Gone only when no SGLang process of the job runs
        here: one that runs on another port is a server the look saw but could not tell apart from this one
        (unknown, never "no process left"; issue 36's flake: a worker watched on a port its log had not named)."""
        found = self._last_find
        others = unclaimed_ports(found, self.port) if isinstance(found, SlurmFound) else []
        if others:
            named = ", ".join("no port" if p is None else str(p) for p in others)
            return ServerProcess(
                alive=None,
                detail=f"SGLang processes of slurm job {self.job_id} run on {self.node} (port {named}), none on "
                f"port {self.port}: which are this server's is not known",
            )
        return ServerProcess(alive=False, detail=f"no SGLang process of slurm job {self.job_id} on {self.node}")


class SlurmProcessWatch(SlurmFind, ProcessWatch):
    """Read only: the server's processes on one node of the job."""

    def __init__(self, host: Host, *, job_id: str, node: str, port: int | None) -> None:
        ProcessWatch.__init__(self, host, port=port, log_path=None)
        self.job_id = job_id
        self.node = node


class SlurmControl(SlurmFind, ServerControl):
    """Stops the server on one node of the job as `stop` stops any server (TERM its group, grace, KILL, the
    sweep of its group and descendants, GPU memory confirmed), and holds the job while it does."""

    def __init__(
        self,
        host: Host,
        *,
        job_id: str,
        node: str,
        port: int | None,
        remote_python: str = "python3",
        sim_gpus: str | None = None,
        grace_s: float | None = None,
    ) -> None:
        ServerControl.__init__(self, host, port=port, log_path=None, remote_python=remote_python, sim_gpus=sim_gpus)
        if grace_s is not None:
            self.grace_s = grace_s
        self.job_id = job_id
        self.node = node

    async def hold_batch(self) -> dict[int, int]:
        """SIGSTOP the batch script (on the batch host), so that the job outlives its server: once the server
        is gone the script would end, and the job with it, before every node is confirmed. Its pids."""
        found = self._parse_find(await self._run(job_procs_command(self.job_id)))
        roots = batch_roots(found) if isinstance(found, SlurmFound) else {}
        if roots:
            await self._run(f"{cmds.PROC_FUNCS}\n{cmds.signal_pids_command('STOP', roots)}")
        return roots

    async def still_running(self) -> list[JobProc]:
        """What still runs in the job on this node (slurm_procs.still_running): what keeps the job alive."""
        found = self._parse_find(await self._run(job_procs_command(self.job_id)))
        return still_running(found) if isinstance(found, SlurmFound) else []

    async def release_batch(self, held: dict[int, int]) -> None:
        """SIGCONT what hold_batch stopped."""
        if held:
            await self._run(f"{cmds.PROC_FUNCS}\n{cmds.signal_pids_command('CONT', held)}")
