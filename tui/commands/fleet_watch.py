"""The servers of `sglang-tui fleet`, watched: one Session per server (as `wait` watches one), every Host from one
HostPool (one connection per SSH host, tui/sources/hostpool.py), each server's state folded once here and
published as a FleetEntry (tui/core/fleet.py) to the headless printers and to the board.

A bare HOST target is every SGLang server discovery finds running there (tui/sources/discover.py), one row each;
a host with none is one row of kind "nothing" (exit 6). The log bytes each server's Monitor read are kept (the
last KEEP_LOG_BYTES) so that the board can open that server's full view later with its log: the view shows the
state folded here, it does not fold a second one (MirrorFold).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from dataclasses import dataclass, field, replace

from tui.commands.inventory import InventoryEntry
from tui.commands.options import FleetOptions
from tui.commands.slurm_members import OpenJob, SlurmMembers
from tui.commands.targets import FleetTarget, HostTarget, JobTarget, ServerTarget
from tui.core import deployment as dm
from tui.core import srtlayout as srt
from tui.core.answerer import printable
from tui.core.config import HostSpec, Target, WatchConfig
from tui.core.discovery import DEFAULT_PORT
from tui.core.events import ConnectionState, ControlResult, Event, LogActivity, LogReset
from tui.core.fleet import FleetEntry
from tui.core.fold import Fold
from tui.core.fold_job import job_ended, job_queued, queue_state
from tui.core.readiness import reduce
from tui.core.state import Readiness
from tui.history.recorder import Recorder
from tui.sources.bounded import wait_at_most, within
from tui.sources.control import ServerControl, process_watch
from tui.sources.deployment import DeploymentMonitor, MemberSpec
from tui.sources.deployment_session import MemberFolder, deployment_monitor, deployment_of
from tui.sources.discover import discover
from tui.sources.host import Host, HostError
from tui.sources.hostpool import HostPool
from tui.sources.procwatch import ProcessWatch
from tui.sources.session import Session, weights_step
from tui.sources.slurm import SlurmError
from tui.sources.slurm_jobs import QueueWatch, add_job_feeds
from tui.sources.weightfiles import WeightFilesProbe

KEEP_LOG_BYTES = 4 << 20  # per server: what its full view shows of the log from before it was opened
DISCOVER_TIMEOUT_S = 20.0


class Tee:
    """What a full view opened later needs of a row's batches: the log kept so far (the last KEEP_LOG_BYTES of
    each member's: a server is the one member ""), then every batch as it comes, to each view open now."""

    def __init__(self) -> None:
        self.kept: dict[str, deque[Event]] = {}
        self.kept_bytes: dict[str, int] = {}
        self.views: set[asyncio.Queue[tuple[str, list[Event]]]] = set()

    def put(self, batch: list[Event], member: str = "") -> None:
        kept = self.kept.setdefault(member, deque())
        size = self.kept_bytes.get(member, 0)
        for event in batch:
            if isinstance(event, LogActivity) and event.data:
                kept.append(event)
                size += len(event.data)
            elif isinstance(event, LogReset):
                kept.append(event)
        while size > KEEP_LOG_BYTES and kept:
            old = kept.popleft()
            if isinstance(old, LogActivity):
                size -= len(old.data)
        self.kept_bytes[member] = size
        for view in self.views:
            view.put_nowait((member, batch))

    async def batches(self) -> AsyncIterator[tuple[str, list[Event]]]:
        """(member, batch): first what was kept, member by member, then each batch until the view closes."""
        queue: asyncio.Queue[tuple[str, list[Event]]] = asyncio.Queue()
        self.views.add(queue)
        try:
            for member, kept in list(self.kept.items()):
                if kept:
                    yield member, list(kept)
            while True:
                yield await queue.get()
        finally:
            self.views.discard(queue)


@dataclass
class JobWatch:
    """A Slurm job's nodes as one server: the members (their SrunHosts, node 0 first), their Monitors, the fold."""

    members: SlurmMembers
    monitor: DeploymentMonitor
    folder: MemberFolder
    dep: dm.Deployment

    async def close(self) -> None:
        await self.monitor.close()
        await self.members.close()


@dataclass
class QueuedJob:
    """A named Slurm job still in the queue: its row follows one squeue look a cycle until the job runs, then
    opens its nodes in place (or stays ended, with Slurm's word)."""

    opened: OpenJob
    watch: QueueWatch
    target: Target
    config: WatchConfig


@dataclass
class Watched:
    """One server of the fleet: its Session (or a Slurm job's members), its row, what its full view needs."""

    entry: FleetEntry
    session: Session | None  # None: a Slurm job's row, a row of kind "nothing", or a host that could not be reached
    host: Host | None = None
    control: ServerControl | None = None  # None under --read-only
    watch: ProcessWatch | None = None  # its processes (the control itself, when there is one)
    port: int | None = None
    recorder: Recorder | None = None
    tee: Tee = field(default_factory=Tee)
    job: JobWatch | None = None  # a Slurm job's row
    queued: QueuedJob | None = None  # a Slurm job's row while the job waits in the queue
    pending: JobTarget | None = None  # an srtctl job's row while its workers' logs are not all there or unnamed

    async def view_batches(self) -> AsyncIterator[list[Event]]:
        """A server's full view: its log kept so far, then every batch as it comes."""
        async for _, batch in self.tee.batches():
            yield batch

    def mirror_fold(self) -> Fold:
        return MirrorFold(self)


class MirrorFold(Fold):
    """A full view's fold: the state is the one the fleet folded (one place decides it); what only the view
    sees (its own restart/terminate/kill results) is folded into the fleet's state first."""

    def __init__(self, watched: Watched) -> None:
        super().__init__()
        object.__setattr__(self, "watched", watched)

    def __call__(
        self, state: Readiness, batch: Iterable[Event], now: float, *, on_error: Callable[[str], None] | None = None
    ) -> Readiness:
        watched: Watched = object.__getattribute__(self, "watched")
        session = watched.session
        if session is None:
            return state
        own = [e for e in batch if isinstance(e, ControlResult)]
        if own:
            session.state = session.fold(session.state, own, now, on_error=on_error)
            watched.entry = replace(watched.entry, state=session.state)
        return session.state


class Fleet:
    """Every server of the fleet, watched; `changed` is told the index of each row whose state moved."""

    def __init__(self, opts: FleetOptions, pool: HostPool) -> None:
        self.opts = opts
        self.pool = pool
        self.rows: list[Watched] = []
        self.clock: Callable[[], float] = time.time
        self.changes: asyncio.Queue[int] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._started = 0  # the rows watched so far (start)

    @property
    def entries(self) -> list[FleetEntry]:
        return [w.entry for w in self.rows]

    async def open(self, targets: list[tuple[FleetTarget, str, str]], budget: float | None = None) -> None:
        """(target, name, group): one row per server, placed in the order given. A server named with its port
        opens at once and is watched from then on (start); a host to search or a Slurm job then takes its looks,
        one target at a time. `budget` (s): a target not opened by then (a host or a login node that never
        answers) is a row that cannot connect, as is each one after it: `--once` keeps its --timeout from its
        start, and no slow host holds the others' looks (m21)."""
        sims = self.opts.sim_gpus.split(",") if self.opts.sim_gpus else []
        origin: list[int] = []  # each row's target (rows are added as targets open; the board shows them in order)
        for index, (target, name, group) in enumerate(targets):
            if isinstance(target, ServerTarget):
                sim = sims[index] if index < len(sims) and sims[index] else None
                self._open_server(target, name, group, sim)
                origin.append(index)
        self.start()
        looked = [(i, t) for i, t in enumerate(targets) if not isinstance(t[0], ServerTarget)]
        try:
            await within(self._open_looked(looked, origin), budget)
        except asyncio.TimeoutError:
            cut = next((i for i, _ in looked if i not in origin), 0)
            origin += [cut] * (len(self.rows) - len(origin))  # the first rows of the target it cut stand
            why = f"not reached within --timeout {budget:g} s"
            for index, (target, name, group) in looked:
                if index not in origin:
                    where = target.name if isinstance(target, JobTarget) else target.host
                    self._add_unreachable(name, where, group, why)
                    origin.append(index)
        for order, row in enumerate(sorted(range(len(self.rows)), key=lambda r: (origin[r], r))):
            self.rows[row].entry = replace(self.rows[row].entry, order=order)

    async def _open_looked(self, looked: list[tuple[int, tuple[FleetTarget, str, str]]], origin: list[int]) -> None:
        for index, (target, name, group) in looked:
            if isinstance(target, HostTarget):
                await self._open_discovered(target, name, group)
            elif isinstance(target, JobTarget):
                await self._open_jobs(target, name, group)
            origin += [index] * (len(self.rows) - len(origin))

    def _add_unreachable(self, name: str, where: str, group: str, why: str) -> None:
        """A row that cannot connect, and why (a failed link: exit 4), watched by nothing."""
        state = reduce(Readiness(), ConnectionState("failed", why), self.clock())
        self.rows.append(Watched(FleetEntry(name, where, state, group=group, order=len(self.rows)), None))

    def _host(self, name: str, row: str = "") -> Host:
        """The host `name`, over the SSH options of the inventory's server `row` where it names its own."""
        own = self.opts.server(row)
        spec = HostSpec(name, own.ssh(self.opts.ssh)) if name != "local" else self.opts.target.spec(name)
        return self.pool.host(spec, own.remote_python)

    def _open_server(
        self, target: ServerTarget, name: str, group: str, sim_gpus: str | None, row: str | None = None
    ) -> None:
        """One server's row; `row`: the inventory entry it came from (a discovered server's: its host's)."""
        own = self.opts.server(row or name)
        host = self._host(target.host, row or name)
        opts = self.opts
        config = WatchConfig(
            port=target.port, log=target.log, remote_python=own.remote_python or opts.remote_python,
            sim_gpus=sim_gpus, launch=own.launch, cwd=own.cwd, read_only=opts.read_only, health=opts.health,
            stall_after=opts.stall_after,
        )  # fmt: skip
        recorder = Recorder(opts.history, target.host, "fleet", warn=False, port=target.port, log=target.log or "")
        watch = process_watch(host, config, None)  # under --read-only a ProcessWatch alone: nothing can signal
        session = Session.open(
            host, config, process_watch=watch, initial=config.first_state(),
            steps=(weights_step(WeightFilesProbe(host)), recorder.step),
            gpu_feed=self.pool.gpus(host, sim_gpus, remote_python=own.remote_python), rest_when_up=True,
        )  # fmt: skip
        entry = FleetEntry(name, target.host, session.state, group=group, order=len(self.rows))
        control = watch if isinstance(watch, ServerControl) else None
        self.rows.append(Watched(entry, session, host, control, watch, target.port, recorder))

    async def _open_discovered(self, target: HostTarget, name: str, group: str) -> None:
        host = self._host(target.host, name)
        try:
            found = await discover(host, timeout=DISCOVER_TIMEOUT_S)
        except (HostError, OSError, TimeoutError) as err:
            self._add_unreachable(name, target.host, group, f"{type(err).__name__}: {err}")
            return
        if not found:
            note = f"no SGLang server found running on {target.host} (give HOST:PORT[:LOG] to watch one)"
            entry = FleetEntry(name, target.host, Readiness(), kind="nothing", group=group, note=note)
            self.rows.append(Watched(replace(entry, order=len(self.rows)), None))
            return
        for server in found:
            each = f"{name}:{server.port}" if len(found) > 1 or name == target.host else name
            self._open_server(ServerTarget(each, target.host, server.port, server.log), each, group, None, name)

    async def _open_jobs(self, target: JobTarget, name: str, group: str) -> None:
        """`slurm:JOBID` (or through a login node): one row, the job's nodes as one server, node 0 first;
        `slurm:`: one row per running job of the user that runs SGLang. A job that is not running (or none at
        all) is a row of kind "nothing" with Slurm's words; a login node that cannot be reached, a row that
        cannot connect."""
        from tui.commands import slurm_members

        said: list[str] = []
        if target.srt is not None:  # an srtctl job: one row, its workers as the members
            members = await slurm_members.resolve(*self._job(target, None), said.append)
            if isinstance(members, int):
                self._nothing_or_unreachable(name, target.name, group, members, said)
            elif members.pending:  # its workers are taken again once all are there and name their ports
                await members.close()
                entry = FleetEntry(name, f"srtctl job {members.job_id}: {members.pending}", Readiness(), kind="job",
                                   group=group, order=len(self.rows))  # fmt: skip
                self.rows.append(Watched(entry, None, pending=target))
            else:
                self._open_job(members, name, group)
            return
        job_ids: list[str | None] = [target.slurm.job_id]
        if target.slurm.job_id is None:
            found = await slurm_members.sglang_jobs(*self._job(target, None), said.append)
            if isinstance(found, int):
                self._nothing_or_unreachable(name, target.name, group, found, said)
                return
            job_ids = list(found)
        for job_id in job_ids:
            each = name if target.slurm.job_id is not None else f"{name}{job_id}"
            if (
                job_id is not None
                and target.slurm.job_id is not None
                and await self._open_queued(target, job_id, each, group)
            ):
                continue
            members = await slurm_members.resolve(*self._job(target, job_id), said.append)
            if isinstance(members, int):
                self._nothing_or_unreachable(each, target.name, group, members, said)
                continue
            self._open_job(members, each, group)

    def _job(self, target: JobTarget, job_id: str | None) -> tuple[Target, WatchConfig]:
        """What slurm_members reads, for one job of this target (its port: the target's, else found on node 0)."""
        opts = self.opts
        login = f"{target.slurm.login}/" if target.slurm.login else ""
        text = f"{login}slurm:{job_id or ''}" + (f":{target.slurm.log}" if target.slurm.log and job_id else "")
        text = target.srt or text
        where = Target((text,), ssh=opts.ssh, port_named=target.port is not None, discover=target.port is None)
        config = WatchConfig(
            port=target.port or DEFAULT_PORT, remote_python=opts.remote_python, read_only=opts.read_only,
            health=opts.health, stall_after=opts.stall_after,
        )  # fmt: skip
        return where, config

    def _nothing_or_unreachable(self, name: str, where: str, group: str, code: int, said: list[str]) -> None:
        from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_CONNECT

        line = printable(said[-1], 300) if said else f"slurm target {where}: exit {code}"
        if code == EXIT_BAD_ARGS:
            raise ValueError(line)
        if code == EXIT_CONNECT:
            self._add_unreachable(name, where, group, line)
            return
        entry = FleetEntry(name, where, Readiness(), kind="nothing", group=group, note=line, order=len(self.rows))
        self.rows.append(Watched(entry, None))

    async def _open_queued(self, target: JobTarget, job_id: str, name: str, group: str) -> bool:
        """A named job that waits in the queue: a row in the `queued` phase, followed until it runs (True);
        False for a job that runs, ended, or cannot be looked at (resolve says what)."""
        from tui.commands import slurm_members

        where, config = self._job(target, job_id)
        opened = await slurm_members.open_job(where, config, lambda _: None)
        if isinstance(opened, int):
            return False
        try:
            job = (await opened.cli.queue([job_id]))[job_id]
        except (SlurmError, HostError):
            job = None
        if job is None or not job_queued(job):
            await opened.base.close()
            return False
        state = reduce(queue_state(config.stall_after), job, self.clock())
        entry = FleetEntry(name, f"slurm {job_id}: in the queue", state, kind="job", group=group, order=len(self.rows))
        self.rows.append(
            Watched(entry, None, queued=QueuedJob(opened, QueueWatch(opened.cli, [job_id]), where, config))
        )
        return True

    def _job_watch(self, members: SlurmMembers, name: str, group: str, order: int) -> tuple[JobWatch, FleetEntry]:
        from tui.sources.slurm_procs import SlurmProcessWatch

        job_id = members.job_id

        def watch(spec: MemberSpec, host: Host) -> SlurmProcessWatch:
            return SlurmProcessWatch(host, job_id=job_id, node=spec.host, port=spec.process_port)

        monitor = deployment_monitor(members.specs, list(members.hosts), self.opts.remote_python, watch)
        # the job's state each cycle (one squeue call): a job that ends reads as ended, with Slurm's word
        add_job_feeds(monitor, QueueWatch(members.cli, [job_id]), job_id, [s.name for s in members.specs])
        dep = deployment_of(members.specs, self.opts.stall_after)
        job = JobWatch(members, monitor, MemberFolder(dep, monitor.set_phase), dep)
        where = f"slurm {job_id}: {','.join(dict.fromkeys(s.host for s in members.specs))}"  # each node once
        parts = tuple(m.state for m in dep.members)
        entry = FleetEntry(name, where, dm.combined(dep), kind="job", group=group, order=order, parts=parts)
        return job, entry

    def _open_job(self, members: SlurmMembers, name: str, group: str) -> None:
        job, entry = self._job_watch(members, name, group, len(self.rows))
        self.rows.append(Watched(entry, None, port=members.specs[0].port if members.specs else None, job=job))

    async def _follow_queue(self, index: int, watched: Watched, queued: QueuedJob) -> None:
        """A queued job's row: each look folded, until the job ends (its row says so) or runs (its nodes open)."""
        from tui.commands import slurm_members

        job_id = queued.opened.job_id
        while True:
            await queued.watch.pause()
            try:
                job = (await queued.watch.look())[job_id]
            except SlurmError:
                continue
            if job_queued(job) or job_ended(job):
                watched.entry = replace(watched.entry, state=reduce(watched.entry.state, job, self.clock()))
                self.changes.put_nowait(index)
                if job_ended(job):
                    return
                continue
            members = await slurm_members.members_of(
                queued.opened, queued.config, queued.target.discover, lambda _: None
            )
            if isinstance(members, int):
                continue  # it ended or went back to the queue between two looks: the next look says
            job_watch, entry = self._job_watch(members, watched.entry.name, watched.entry.group, watched.entry.order)
            watched.queued, watched.job, watched.entry = None, job_watch, entry
            watched.port = members.specs[0].port if members.specs else None
            self.changes.put_nowait(index)
            await self._follow_job(index, watched, job_watch)
            return

    async def _follow_pending(self, index: int, watched: Watched, target: JobTarget) -> None:
        """An srtctl job's row whose workers were not all there, or did not all name their ports, when the board
        opened: they are waited for as `wait` waits for them (a port taken before its log names it is srtctl's
        allocation, a guess: issue 36's flake), then the row watches them."""
        from tui.commands import slurm_members

        said: list[str] = []
        members = await slurm_members.resolve(*self._job(target, None), said.append, wait_for_workers=True)
        if isinstance(members, int):
            line = printable(said[-1], 300) if said else f"srtctl target {target.name}: exit {members}"
            watched.entry = replace(watched.entry, kind="nothing", note=line)
            watched.pending = None
            self.changes.put_nowait(index)
            return
        job_watch, entry = self._job_watch(members, watched.entry.name, watched.entry.group, watched.entry.order)
        watched.pending, watched.job, watched.entry = None, job_watch, entry
        watched.port = members.specs[0].port if members.specs else None
        self.changes.put_nowait(index)
        await self._follow_job(index, watched, job_watch)

    def start(self) -> None:
        """Watch every row not yet watched (open starts the rows it has, then the caller the rest)."""
        new = range(self._started, len(self.rows))
        self._started = len(self.rows)
        self._tasks += [asyncio.ensure_future(self._follow_row(i, self.rows[i])) for i in new
                        if (w := self.rows[i]).session is not None or w.job is not None or w.queued is not None
                        or w.pending is not None]  # fmt: skip

    def _follow_row(self, index: int, watched: Watched) -> Coroutine[object, object, None]:
        if watched.queued is not None:
            return self._follow_queue(index, watched, watched.queued)
        if watched.pending is not None:
            return self._follow_pending(index, watched, watched.pending)
        if watched.job is not None:
            return self._follow_job(index, watched, watched.job)
        return self._follow(index, watched)

    async def _follow_job(self, index: int, watched: Watched, job: JobWatch) -> None:
        word = await self._follow_word(index, watched, job)
        try:
            async for member, batch in job.monitor.batches():
                job.dep = job.folder(job.dep, member, batch, self.clock())
                watched.tee.put(batch, member)
                self._publish(index, watched, job)
        finally:
            if word is not None:
                word.cancel()
                await asyncio.gather(word, return_exceptions=True)

    def _publish(self, index: int, watched: Watched, job: JobWatch) -> None:
        parts = tuple(m.state for m in job.dep.members)
        watched.entry = replace(watched.entry, state=dm.combined(job.dep), parts=parts)
        self.changes.put_nowait(index)

    async def _follow_word(self, index: int, watched: Watched, job: JobWatch) -> asyncio.Task[None] | None:
        """An srtctl job's benchmark word (its log and benchmark.out, one read a cycle: srt_members.follow_word),
        folded into the row's deployment; the reads stop once the job ended (one last read after that). The first
        read is taken before the workers' first batches, so that no verdict of the row (`--once`) comes before
        the word is known."""
        from tui.commands import srt_members

        srt_dir = job.members.srt_dir
        if srt_dir is None:
            return None
        first = await srt_members.read_word(job.members.base, srt_dir, job.members.job_id)
        if first is not None:
            job.dep = job.dep.with_benchmark(first)
            self._publish(index, watched, job)

        def fold(word: srt.BenchmarkWord) -> bool:
            before = job.dep.benchmark
            job.dep = job.dep.with_benchmark(word)
            if job.dep.benchmark != before:
                self._publish(index, watched, job)
            state = watched.entry.state.slurm_job
            return state is not None and job_ended(state)

        return asyncio.ensure_future(srt_members.follow_word(job.members.base, srt_dir, job.members.job_id, fold))

    async def _follow(self, index: int, watched: Watched) -> None:
        session = watched.session
        assert session is not None
        async for batch in session.batches():
            before = session.state
            session.state = session.fold(before, batch, session.clock())
            watched.tee.put(batch)
            if (
                session.state != before
            ):  # a tick at ready changes no fact: no row to redraw (records compare by `is` first)
                watched.entry = replace(watched.entry, state=session.state)
                self.changes.put_nowait(index)

    async def close(self) -> None:
        """Stop every row's watch, then close the rows at once and the pool, each step bounded: one row whose
        host answers slowly (a loaded or frozen node, an agent with many commands to stop) must not hold the exit
        of every other (m20, m21: a fleet that did not end). What a bound cuts ends with this process: the agents
        and their commands stop at EOF on their stdin (tui/sources/mux_agent.py)."""
        for task in self._tasks:
            task.cancel()
        await wait_at_most(asyncio.gather(*self._tasks, return_exceptions=True), CANCEL_S)
        for watched in self.rows:
            if watched.recorder is not None:
                watched.recorder.finish(watched.entry.state)
        await wait_at_most(asyncio.gather(*(_close_row(w) for w in self.rows), return_exceptions=True), CLOSE_STEP_S)
        await wait_at_most(self.pool.close(), CLOSE_STEP_S)


CANCEL_S = 3.0  # a cancelled watch ends at its next await; what has not by then is cut
CLOSE_STEP_S = 5.0  # closing the rows, every row at once, then the hosts (a host's own closes wait 5 s at most)


async def _close_row(watched: Watched) -> None:
    """Close what one row opened: a queued job's base host, a job's members, a server's session."""
    if watched.queued is not None:
        with contextlib.suppress(Exception):
            await watched.queued.opened.base.close()
    if watched.job is not None:
        with contextlib.suppress(Exception):
            await watched.job.close()
    if watched.session is not None:
        with contextlib.suppress(Exception):
            await watched.session.close()


def targets_of(opts: FleetOptions, inventory: list[InventoryEntry]) -> list[tuple[FleetTarget, str, str]]:
    """The command line's TARGETs, then the inventory's servers: (target, name, group); ValueError with one line
    (a bad target, a name given twice)."""
    from tui.commands.targets import fleet_target

    out: list[tuple[FleetTarget, str, str]] = [
        (fleet_target(text, port=opts.port, log=opts.log), text, "") for text in opts.targets
    ]
    out += [(e.target, e.name, e.group) for e in inventory]
    names = [name for _, name, _ in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"the server {twice[0]} is given twice (names must be unique; name them in an --inventory)")
    return out
