"""`sglang-tui wait slurm:JOBID` (and `LOGIN/slurm:JOBID`, `slurm:`): a Slurm job as a multi-node deployment,
node 0 first, every node watched inside the job's allocation (tui/sources/slurm.py), with the deployment's
verdict and exit codes (tui/commands/wait_deployment.py).

The job's state is a fact each cycle (one squeue call, tui/sources/slurm_jobs.py): a job still in the queue is
waited for in the `queued` phase ("queued: Resources, 3m10s in queue"); once it runs its nodes are watched, and
the job's state goes on being folded into every node's state, so that a job that ends (CANCELLED, FAILED,
TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, …) ends the wait with Slurm's own word (exit 1). A requeued job
is followed into its new run (back to the queue, then its new nodes). --timeout counts from the job's start
(from the wait's own start when the job already runs): time in Slurm's queue is not counted. 6 when Slurm
knows no such job.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from tui.commands import slurm_members
from tui.commands.options import WaitOptions
from tui.commands.wait_deployment import Reporting
from tui.core import deployment as dm
from tui.core import srtlayout as srt_layout
from tui.core import wording
from tui.core.config import Target, WatchConfig
from tui.core.events import SlurmJobState
from tui.core.exitcodes import EXIT_CONNECT, EXIT_NOTHING, EXIT_TIMEOUT
from tui.core.fold_job import job_ended, job_queued, queue_state
from tui.core.readiness import reduce
from tui.core.verdict import decide
from tui.sources.deployment import MemberSpec
from tui.sources.deployment_session import DeploymentSession, deployment_monitor, deployment_of
from tui.sources.host import Host
from tui.sources.slurm import SlurmError
from tui.sources.slurm_jobs import JobFollowed, QueueWatch
from tui.sources.slurm_procs import SlurmProcessWatch
from tui.sources.waiting import wait_for

QUEUE_LOOK_S = 2.0  # one look at the queue every this many seconds
QUEUE_ERRORS = 5  # squeue failing this many looks in a row ends the wait (4): slurmctld is gone


async def _main(opts: WaitOptions, reporter: Reporting) -> int:
    def say(line: str) -> None:
        reporter.say(f"sglang-tui wait: {line}")

    opened = await slurm_members.open_job(opts.target, opts.server, say)
    if isinstance(opened, int):
        return opened
    watch = QueueWatch(opened.cli, [opened.job_id], every=QUEUE_LOOK_S, errors=QUEUE_ERRORS)
    try:
        while True:
            queued = await _queue(opts, reporter, watch, opened.job_id)
            if queued is not None:
                return queued
            code = await _run(opts, reporter, opened, watch)
            if code is not None:
                return code
            say(f"slurm job {opened.job_id} was requeued: following it into its new run")
    finally:
        await opened.base.close()


async def _queue(opts: WaitOptions, reporter: Reporting, watch: QueueWatch, job_id: str) -> int | None:
    """Wait while the job is in the queue, each look folded and reported (`queued`); None once it runs, else the
    exit code after the last line (1: it ended, with Slurm's word; 4: Slurm cannot be reached; 6: unknown)."""
    state = queue_state(opts.server.stall_after)
    began = time.monotonic()
    first = True
    while True:
        try:
            job = (await watch.look())[job_id]
        except SlurmError as exc:
            reporter.say(f"sglang-tui wait: {exc}")
            return EXIT_CONNECT
        if first and job.state == "GONE":
            reporter.say(f"sglang-tui wait: no Slurm job {job_id}: nothing to watch")
            return EXIT_NOTHING
        first = False
        if not job_queued(job) and not job_ended(job):
            return None  # RUNNING (or COMPLETING, SUSPENDED…: the nodes say what runs)
        state = reduce(state, job, time.time())
        reporter.update(state, time.monotonic() - began)
        verdict = decide(state)
        if verdict.final:
            if opts.json:
                reporter.emit_json(state, force=True)
            reporter.say(f"sglang-tui wait: {wording.line(verdict, state, state.updated_at)}")
            return verdict.code
        await watch.pause()


async def _run(opts: WaitOptions, reporter: Reporting, opened: slurm_members.OpenJob, watch: QueueWatch) -> int | None:
    """Watch the running job's nodes until the deployment's verdict (its exit code), the job's state folded in
    each cycle; None when the job went back to the queue (requeued)."""
    started = time.monotonic()

    def say(line: str) -> None:
        reporter.say(f"sglang-tui wait: {line}")

    members = await slurm_members.members_of(opened, opts.server, opts.target.discover, say, owns_base=False)
    if isinstance(members, int):
        return None if members == EXIT_NOTHING and await _back_in_queue(watch, opened.job_id) else members
    try:
        for note in members.notes:
            say(note)
        job_id = members.job_id

        def process_watch(spec: MemberSpec, host: Host) -> SlurmProcessWatch:
            return SlurmProcessWatch(host, job_id=job_id, node=spec.host, port=spec.process_port)

        monitor = deployment_monitor(members.specs, list(members.hosts), opts.server.remote_python, process_watch)
        session = DeploymentSession(monitor, deployment_of(members.specs, opts.server.stall_after))
        followed = JobFollowed(session, watch, job_id, [s.name for s in members.specs])
        remaining = None if opts.timeout is None else max(0.0, opts.timeout - (time.monotonic() - started))
        found, state = await wait_for(followed, reporter.update, timeout=remaining, say=say, budget=opts.timeout)
        if followed.requeued:
            return None
        if members.srt_dir is not None:  # an srtctl job: its benchmark's word folded in, as the board's job watch does
            from tui.commands import srt_members

            word = await srt_members.read_word(opened.base, members.srt_dir, opened.job_id)
            if word is not None:
                session.dep = session.dep.with_benchmark(word)
                state = session.state = dm.combined(session.dep)
        if opts.json:
            reporter.emit_json(state, force=True)
        said = wording.line(found, state, state.updated_at)
        say(said)
        disagrees = state.benchmark_disagrees if isinstance(state, dm.Combined) else None
        if disagrees is not None:  # the fact the fold made, worded against the servers' own line
            say(srt_layout.disagreement_line(disagrees, said))
        return found.code if found.code is not None else EXIT_TIMEOUT
    finally:
        await members.close()


async def _back_in_queue(watch: QueueWatch, job_id: str) -> bool:
    """Whether a job that stopped running between two looks is in the queue again (requeued)."""
    try:
        job: SlurmJobState = (await watch.look())[job_id]
    except SlurmError:
        return False
    return job_queued(job)


async def queued_first(target: Target, server: WatchConfig, say: Callable[[str], None]) -> int | None:
    """Before the TUI opens a job's nodes: while the job waits in the queue, one line each time Slurm's word or
    reason changes ("queued: Resources, 3m10s in queue"); None once it runs (or when it cannot be looked at: the
    TUI's own resolve says why), else the exit code after the line of its end."""
    opened = await slurm_members.open_job(target, server, lambda _: None)
    if isinstance(opened, int):
        return None
    try:
        watch = QueueWatch(opened.cli, [opened.job_id], every=QUEUE_LOOK_S, errors=QUEUE_ERRORS)
        state = queue_state(server.stall_after)
        said: tuple[str, str] | None = None
        while True:
            try:
                job = (await watch.look())[opened.job_id]
            except SlurmError:
                return None
            if not job_queued(job) and not job_ended(job):
                return None
            state = reduce(state, job, time.time())
            verdict = decide(state)
            if verdict.final or said != (job.state, job.reason):
                say(wording.line(verdict, state, state.updated_at))
                said = (job.state, job.reason)
            if verdict.final:
                return verdict.code
            await watch.pause()
    finally:
        await opened.base.close()


def run(opts: WaitOptions, reporter: Reporting) -> int:
    return asyncio.run(_main(opts, reporter))
