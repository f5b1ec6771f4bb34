"""Slurm as the cluster engine: the job read with Slurm's own commands, and a Host per node whose commands run
inside the job's allocation.

`SlurmCli` runs scontrol / squeue / scancel on the machine that has them: this one (`LocalHost`) or a login
node (`SshHost`, `LOGIN/slurm:JOBID`). `SrunHost` is the Host of one compute node: one mux agent started with
`srun --jobid=J --overlap -w NODE -N1 -n1 sh -c 'exec PYTHON -u -c BOOT'` (tui/sources/muxhost.py), so the
node's log tail, GPU probe, process watch and short commands share one job step, marked `sglang-tui` in
`squeue -s`; no SSH to a compute node is needed. HTTP goes to NODE:PORT, straight from here or through an SSH
forward from the login node.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from dataclasses import dataclass

from tui.core import slurmjob as sj
from tui.core.events import SlurmJobState
from tui.sources.host import Host, HostAuthError, HostError
from tui.sources.muxhost import MuxGone, MuxHost, agent_command

STEP_NAME = "sglang-tui"  # our steps' name in `squeue -s`: few probes, marked as ours
q = shlex.quote

# What srun says when the job (or the node in it) can no longer be reached: retrying will not bring it back.
_ENDED = re.compile(
    r"has expired|Invalid job id|already (?:completed|finished)|Unable to confirm allocation|"
    r"Requested node configuration is not available|job .*(?:completing|cancelled|is not running)",
    re.IGNORECASE,
)


class JobEnded(HostAuthError):
    """Final, like a refused key: the job ended (or the node is not in it), so its allocation cannot be entered
    again; the sources stop retrying."""


class SlurmError(HostError):
    """A Slurm command failed: str() is one line (the command's own words, and what to do)."""


def srun_command(job_id: str, node: str, command: str, *, gpus: int | None = None) -> str:
    """`srun --jobid=J --overlap -w NODE -N1 -n1 … sh -c COMMAND` (every word quoted). The step shares the job's
    resources (--overlap); it asks for the job's GPUs per node so that the probe sees them where Slurm
    constrains devices. SLURM_JOB_ID is taken out of the agent's environment: our processes are no job
    process for the find of the server (tui/sources/slurm_procs.py)."""
    words = ["srun", f"--jobid={job_id}", "--overlap", "-w", node, "-N1", "-n1", f"--job-name={STEP_NAME}", "--quiet"]
    if gpus:
        words.append(f"--gres=gpu:{gpus}")
    inner = f"exec env -u SLURM_JOB_ID -u SLURM_JOBID sh -c {q(command)}"
    return " ".join(q(w) for w in words) + f" sh -c {q(inner)}"


class SrunHost(MuxHost):
    """One compute node of a running job, reached through `srun --overlap` from `base` (this machine or a login
    node). The agent starts on connect; it is started again after it died, until the job has ended."""

    def __init__(
        self, base: Host, job_id: str, node: str, *, remote_python: str = "python3", gpus: int | None = None
    ) -> None:
        launcher = srun_command(job_id, node, agent_command(remote_python), gpus=gpus)
        super().__init__(base, launcher, name=f"{node} (slurm job {job_id})")
        self.job_id = job_id
        self.node = node

    def _gone(self, why: str) -> HostError:
        if _ENDED.search(why):
            return JobEnded(f"slurm job {self.job_id} on {self.node} cannot be entered{why}")
        return MuxGone(f"{self.name}: srun ended{why}")

    async def http_base_url(self, port: int) -> str:
        """NODE:PORT as the machine with Slurm's commands reaches it (straight, or forwarded by the login node)."""
        return await self.base.url_to(self.node, port)


@dataclass(frozen=True)
class JobNodes:
    """A running job and its nodes in the job's order (node 0 first), with the host name %N means on each."""

    job: sj.SlurmJob
    nodes: tuple[str, ...]
    hostnames: dict[str, str]


class SlurmCli:
    """Slurm's commands on `host` (this machine, or a login node): each answer parsed by tui/core/slurmjob."""

    def __init__(self, host: Host, *, timeout: float = 30.0) -> None:
        self.host = host
        self.timeout = timeout

    async def _run(self, command: str, what: str) -> str:
        try:
            result = await self.host.run(command, timeout=self.timeout)
        except TimeoutError:
            raise SlurmError(f"{what}: no answer within {self.timeout:g} s (is slurmctld reachable?)") from None
        err = " ".join(result.stderr.decode("utf-8", "replace").split())
        if result.returncode == 127 or ("not found" in err and result.returncode != 0 and not result.stdout):
            raise SlurmError(f"{what}: Slurm's commands are not on PATH on {self.host.name} ({err[:200]})")
        if result.returncode != 0:
            raise SlurmError(f"{what}: {err[:300] or f'exit status {result.returncode}'}")
        return result.stdout.decode("utf-8", "replace")

    async def job(self, job_id: str) -> sj.SlurmJob | None:
        """The job as `scontrol show job -o` says (None: Slurm knows no such job)."""
        try:
            text = await self._run(f"scontrol show job -o {q(job_id)}", f"scontrol show job {job_id}")
        except SlurmError as exc:
            if "Invalid job id" in str(exc):
                return None
            raise
        return sj.parse_show_job(text, job_id)

    async def hostnames(self, node_list: str) -> tuple[str, ...]:
        return sj.parse_hostnames(await self._run(f"scontrol show hostnames {q(node_list)}", "scontrol show hostnames"))

    async def node_hostnames(self, node_list: str) -> dict[str, str]:
        """NodeName -> NodeHostName (what %N expands to there)."""
        return sj.parse_node_hostnames(await self._run(f"scontrol show node -o {q(node_list)}", "scontrol show node"))

    async def job_nodes(self, job: sj.SlurmJob, *, hostnames: bool = False) -> JobNodes:
        nodes = await self.hostnames(job.node_list) if job.node_list else ()
        names = await self.node_hostnames(job.node_list) if hostnames and job.node_list else {}
        return JobNodes(job, nodes, {n: names.get(n, n) for n in nodes})

    async def running_jobs(self) -> tuple[str, ...]:
        """The ids of the running jobs of the user these commands run as."""
        text = await self._run('squeue -h -u "$(id -un)" -t RUNNING -o %A', "squeue")
        return sj.parse_running_jobs(text)

    async def batch_script(self, job_id: str) -> str:
        """The job's batch script ("" when Slurm cannot give it: an salloc allocation, an older Slurm)."""
        try:
            return await self._run(f"scontrol write batch_script {q(job_id)} -", "scontrol write batch_script")
        except SlurmError:
            return ""

    async def state(self, job_id: str) -> str:
        """The job's state in squeue ("" once it is gone)."""
        return (await self._run(f"squeue -h -j {q(job_id)} -o %T 2>/dev/null || true", "squeue")).strip()

    async def queue(self, job_ids: tuple[str, ...] | list[str]) -> dict[str, SlurmJobState]:
        """Every followed job's state in one squeue call (tui/core/slurmjob.parse_queue): the look made once a
        cycle, for all jobs at once."""
        try:
            result = await self.host.run(sj.queue_command(job_ids), timeout=self.timeout)
        except TimeoutError:
            raise SlurmError(f"squeue: no answer within {self.timeout:g} s (is slurmctld reachable?)") from None
        try:
            return sj.parse_queue(result.stdout.decode("utf-8", "replace"), job_ids)
        except sj.QueueLookError as exc:
            raise SlurmError(f"squeue on {self.host.name}: {exc}") from None

    async def mark_stopping(self, job_id: str) -> None:
        """Mark the job as cancelled by sglang-tui (its Comment, when it has none of the user's), so that a `wait`
        or a board that watches it says "stopped" rather than "failed". Best effort."""
        try:
            text = await self._run(f"squeue -h -j {q(job_id)} -o %k", "squeue")
            if text.strip() in ("", "(null)"):
                await self._run(f"scontrol update JobId={q(job_id)} Comment={q(sj.STOP_MARK)}", "scontrol update")
        except SlurmError:
            pass

    async def cancel(self, job_id: str) -> None:
        await self._run(f"scancel {q(job_id)}", f"scancel {job_id}")

    async def wait_gone(self, job_id: str, timeout: float) -> str:
        """Poll squeue until the job is gone (""), else its last state after `timeout` s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            state = await self.state(job_id)
            if not state or loop.time() >= deadline:
                return state
            await asyncio.sleep(0.5)
