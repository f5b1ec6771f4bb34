"""The Slurm job's state as a fact each cycle: one squeue call a cycle for every job followed (QueueWatch), and
a running job's nodes watched with that state folded into every node's own state (JobFollowed), so that the
deployment's verdict says when the job ended, with Slurm's word, and a requeue is seen.

The facts are folded by the reducer (tui/core/fold_job.py); this module only looks and hands them over.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from tui.core import deployment as dm
from tui.core.events import SlurmJobState
from tui.core.fold_job import job_ended, job_queued
from tui.core.state import Readiness
from tui.core.verdict import decide
from tui.sources.deployment import DeploymentMonitor
from tui.sources.deployment_session import DeploymentSession
from tui.sources.host import HostError
from tui.sources.slurm import SlurmCli, SlurmError

SETTLE_S = 60.0  # a final verdict waits at most this long for a completing job's last word (Slurm's KillWait)


class QueueWatch:
    """One look at the queue (one squeue call) for every followed job, every `every` seconds. A look that fails is
    tried again next cycle; `errors` failures in a row raise the last one (slurmctld is gone)."""

    def __init__(self, cli: SlurmCli, job_ids: list[str], *, every: float = 2.0, errors: int = 5) -> None:
        self.cli = cli
        self.job_ids = list(job_ids)
        self.every = every
        self.errors = errors

    async def look(self) -> dict[str, SlurmJobState]:
        failed = 0
        while True:
            try:
                return await self.cli.queue(self.job_ids)
            except (SlurmError, HostError) as exc:
                failed += 1
                if failed >= self.errors:
                    raise SlurmError(str(exc)) from None
            await self.pause()

    async def pause(self) -> None:
        await asyncio.sleep(self.every)


def add_job_feeds(monitor: DeploymentMonitor, watch: QueueWatch, job_id: str, names: list[str]) -> None:
    """The job's state each cycle into every member of a running job's monitor (the board, the TUI): one look a
    cycle, made by the first member's stream and handed to the others', so that a job that ends reads as ended
    with Slurm's word on every member. The looks stop once the job ended, or when the monitor closes."""
    if not names:
        return
    others: dict[str, asyncio.Queue[SlurmJobState]] = {name: asyncio.Queue() for name in names[1:]}

    async def looks() -> AsyncIterator[SlurmJobState]:
        while True:
            try:
                job = (await watch.look())[job_id]
            except SlurmError:
                await watch.pause()
                continue
            for queue in others.values():
                queue.put_nowait(job)
            yield job
            if job_ended(job):
                return
            await watch.pause()

    async def handed(queue: asyncio.Queue[SlurmJobState]) -> AsyncIterator[SlurmJobState]:
        while True:
            yield await queue.get()

    monitor.add_stream(names[0], looks())
    for name, queue in others.items():
        monitor.add_stream(name, handed(queue))


class JobFollowed:
    """A running job's DeploymentSession (its nodes as members) with the job's state looked at each cycle and
    folded into every member: what the one wait loop (tui/sources/waiting.py) waits on. `requeued` turns True
    when the job went back to the queue: the states end, and the caller follows the job into its new run."""

    settles = False

    def __init__(self, session: DeploymentSession, watch: QueueWatch, job_id: str, names: list[str]) -> None:
        self.session = session
        self.watch = watch
        self.job_id = job_id
        self.requeued = False
        self._feeds: dict[str, asyncio.Queue[SlurmJobState]] = {name: asyncio.Queue() for name in names}
        for name in names:
            session.monitor.add_stream(name, self._feed(name))
        self._poller: asyncio.Task[None] | None = None

    @property
    def state(self) -> Readiness:
        return self.session.state

    @state.setter
    def state(self, value: Readiness) -> None:
        self.session.state = value

    def clock(self) -> float:
        return self.session.clock()

    async def _feed(self, name: str) -> AsyncIterator[SlurmJobState]:
        queue = self._feeds[name]
        while True:
            yield await queue.get()

    def _hand_over(self, job: SlurmJobState) -> None:
        if job_queued(job):
            self.requeued = True
        for queue in self._feeds.values():
            queue.put_nowait(job)

    async def _poll(self) -> None:
        while True:
            try:
                job = (await self.watch.look())[self.job_id]
            except SlurmError:
                await self.watch.pause()  # Slurm cannot be reached: the nodes go on saying what they can
                continue
            self._hand_over(job)
            if job_ended(job):
                return
            await self.watch.pause()

    def _fold_now(self, job: SlurmJobState) -> Readiness:
        """A look made outside the cycle, folded into every member at once."""
        now = self.session.clock()
        for name in self._feeds:
            self.session.dep = self.session.folder(self.session.dep, name, [job], now)
        self.session.state = dm.combined(self.session.dep)
        return self.session.state

    async def states(self) -> AsyncIterator[tuple[Readiness, float]]:
        if self._poller is None:
            self._poller = asyncio.ensure_future(self._poll())
        async for state, now in self.session.states():
            if self.requeued:
                return
            verdict = decide(state)
            if verdict.final and verdict.kind not in ("ready", "serving"):
                # a node failed or its link gave up: when the job ended (slurmstepd's `*** STEP … CANCELLED`
                # line in the log, srun refused) or went back to the queue, Slurm's word comes first
                job = await self._settled()
                if job is not None and job_queued(job):
                    self.requeued = True
                    return
                if job is not None and job_ended(job):
                    state = self._fold_now(job)
            yield state, now

    async def _settled(self) -> SlurmJobState | None:
        """The job's state once it is no longer completing (at most SETTLE_S): ended, queued again, or running."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_S
        while True:
            try:
                job: SlurmJobState | None = (await self.watch.cli.queue([self.job_id]))[self.job_id]
            except (SlurmError, HostError):
                job = None
            if job is None or job.state != "COMPLETING" or loop.time() >= deadline:
                return job
            await asyncio.sleep(min(self.watch.every, 1.0))

    async def check_alive(self) -> Readiness:
        return self.session.state

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        await self.session.close()
