"""Monitor: every source of one host merged into batches of events (log, health, GPUs, processes, link, ticks).

Each source is a worker task that only puts events on one queue; `batches()` hands the consumer whatever
piled up since the last batch, so a busy log costs the consumer one fold per batch, not one per line.
A worker that fails becomes an event and is restarted; the consumer never sees an exception.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace

from tui.core.control import ProcessWatchLike
from tui.core.events import (
    ConnectionState,
    Event,
    GpuSnapshot,
    LaunchStarted,
    LogActivity,
    LogLook,
    LogReset,
    Milestone,
    ServerProcess,
    SourceFailed,
    Tick,
)
from tui.sources.backoff import backoff_delays
from tui.sources.gpu import gpu_snapshots
from tui.sources.health import HealthPoller
from tui.sources.host import Host, HostAuthError, HostError
from tui.sources.logtail import LogTail
from tui.sources.procwatch import ProcessWatch

log = logging.getLogger(__name__)

# Log milestones that mean uvicorn serves HTTP: /health can turn 200 any moment now, so poll it fast.
HTTP_UP_MILESTONES = frozenset(
    {"uvicorn_started", "app_startup_complete", "uvicorn_running", "warmup_request", "fired_up"}
)


# resets that begin the read again: the history read so far is over (a skip or the launch's start is not one)
_ENDS_HISTORY = ("truncated", "rotated", "missing", "appeared")


class HistoryRead:
    """The bytes a look at the log found written are history (tui/core/clocks.py): the look goes on the queue
    before them, and once the tail has read up to its size, the same look marked live (read as written from
    there). The log's events flow on in between as they are parsed."""

    def __init__(self, put: Callable[[Event], None]) -> None:
        self._put = put
        self.look: LogLook | None = None  # the look whose bytes are being read; None: reading live

    def begin(self, look: LogLook) -> None:
        self.end()
        self._put(look)
        self.look = None if look.live else look

    def read_to(self, offset: int) -> None:
        """The tail has read up to `offset`."""
        if self.look is not None and offset >= self.look.end:
            self.end()

    def end(self) -> None:
        if self.look is not None:
            self._put(replace(self.look, live=True))
            self.look = None


def coalesce(events: list[Event]) -> list[Event]:
    """Merge the LogActivity events of a batch (between resets) into one, keeping everything else in order."""
    out: list[Event] = []
    pending: LogActivity | None = None
    for event in events:
        if isinstance(event, LogActivity):
            pending = event if pending is None else LogActivity(event.offset, pending.data + event.data)
            continue
        if isinstance(event, LogReset) and pending is not None:
            out.append(pending)
            pending = None
        out.append(event)
    if pending is not None:
        out.append(pending)
    return out


class Monitor:
    """Watches one server on one host; `batches()` yields lists of events until `close()`."""

    def __init__(
        self,
        host: Host,
        *,
        log_path: str | None,
        port: int,
        remote_python: str = "python3",
        sim_gpus: str | None = None,
        gpu_interval: float = 1.0,
        tick_interval: float = 1.0,
        process_interval: float = 2.0,
        batch_interval: float = 0.02,
        process_watch: ProcessWatchLike | None = None,
        health: HealthPoller | None = None,
        gpus: bool = True,
        processes: bool = True,
        activity: bool = True,
        ticks: bool = True,
        gpu_feed: Callable[[], AsyncIterator[GpuSnapshot]] | None = None,
        rest_when_up: bool = False,
    ) -> None:
        self.host = host
        self.log_path = log_path
        self.port = port
        self.remote_python = remote_python
        self.sim_gpus = sim_gpus
        self.gpu_interval = gpu_interval
        self.tick_interval = tick_interval
        self.process_interval = process_interval
        self.batch_interval = batch_interval
        self.health = health or HealthPoller(host, port)
        self.process_watch = process_watch
        """Finds and watches the server's processes (None: a ProcessWatch of its own); a ServerControl too when
        the keys may act on what it finds, never under --read-only."""
        self._want_gpus = gpus
        self._want_processes = processes
        self._want_activity = activity  # the process watch's signals beyond the log (issue 13)
        self._want_ticks = ticks  # False: the consumer keeps its own clock (the TUI's timer), so none are queued
        self._gpu_feed = gpu_feed  # the host's one probe, shared with other servers there (sources/hostpool.py)
        self._rest_when_up = rest_when_up  # fleet, export: once up, the process watch only says it lives
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._connection = "connecting"
        self._closed = False
        self._failed = False
        host.on_connection(self._on_connection)

    # ------------------------------------------------------------------------------------------- public

    def set_phase(self, phase: object) -> None:
        """The consumer's current phase (from its reducer), so the health poller picks its cadence, and with
        rest_when_up the process watch its own (ProcessWatch.rest: what is due once the server is up)."""
        name = getattr(phase, "value", phase)
        self.health.set_phase(name)  # type: ignore[arg-type]
        rest = getattr(self.process_watch, "rest", None) if self._rest_when_up else None
        if rest is not None:
            rest(name in ("ready", "serving"))

    async def batches(self) -> AsyncIterator[list[Event]]:
        """Forever (until close()): the events that arrived since the last batch, LogActivity merged."""
        if not self._tasks:
            self._tasks.append(asyncio.ensure_future(self._run()))
        try:
            while not self._closed:
                first = await self._queue.get()
                if self.batch_interval > 0:
                    await asyncio.sleep(self.batch_interval)  # let a burst gather into one batch
                batch = [first]
                while not self._queue.empty():
                    batch.append(self._queue.get_nowait())
                yield coalesce(batch)
        finally:
            await self.close()

    async def close(self) -> None:
        self._closed = True
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.health.aclose()

    # ---------------------------------------------------------------------------------------- plumbing

    def _put(self, event: Event) -> None:
        if not self._closed:
            self._queue.put_nowait(event)

    def _on_connection(self, state: ConnectionState) -> None:
        self._connection = state.state
        self._failed = self._failed or state.state == "failed"
        self._put(state)

    async def _run(self) -> None:
        """Connect (retrying what is worth retrying), then start every source."""
        delays = backoff_delays(0.5, 30.0)
        while True:
            try:
                await self.host.connect()
                break
            except HostAuthError as exc:
                if not self._failed:
                    self._on_connection(ConnectionState("failed", str(exc)))
                return
            except HostError as exc:
                self._on_connection(ConnectionState("reconnecting", str(exc)))
                await asyncio.sleep(next(delays))
        if self._connection != "connected":
            self._on_connection(ConnectionState("connected", self.host.name))
        workers: list[Callable[[], Awaitable[None]]] = [self._ticks] if self._want_ticks else []
        workers.append(self._health)
        if self.log_path:
            workers.append(self._tail)
        if self._want_gpus:
            workers.append(self._gpus)
        if self._want_processes:
            workers.append(self._processes)
        await asyncio.gather(*(self._supervise(worker) for worker in workers))

    async def _supervise(self, worker: Callable[[], Awaitable[None]]) -> None:
        """Run a worker; when it fails, say so as an event and start it again after a backoff."""
        delays = backoff_delays(1.0, 30.0)
        while not self._closed and not self._failed:
            try:
                await worker()
                return
            except asyncio.CancelledError:
                raise
            except HostAuthError:
                return  # the host already reported `failed`; nothing to retry
            except Exception as exc:  # a bug or an unexpected answer: an event, never a crash
                log.exception("monitor worker %s failed", worker.__name__)
                for event in self._failure_events(worker, exc):
                    self._put(event)
                await asyncio.sleep(next(delays))

    def _failure_events(self, worker: Callable[[], Awaitable[None]], exc: Exception) -> list[Event]:
        """A crash, reported under the worker's own source only: never as another source's fact."""
        what = f"{type(exc).__name__}: {exc}"
        sources: dict[Callable[[], Awaitable[None]], str] = {
            self._ticks: "ticks", self._health: "health", self._tail: "log", self._gpus: "gpus",
            self._processes: "processes",
        }  # fmt: skip
        events: list[Event] = [SourceFailed(sources.get(worker, worker.__name__.lstrip("_")), what)]
        if worker == self._tail:  # the restarted tail reads the file again from its start: the log's own fact
            events.append(LogReset("missing", f"log tail failed ({what}); starting it again"))
        elif worker == self._gpus:  # the GPU figures shown are stale until the restarted probe answers
            events.append(GpuSnapshot(source="probe", error=f"GPU monitor failed ({what}); starting it again"))
        return events

    # ----------------------------------------------------------------------------------------- workers

    async def _ticks(self) -> None:
        while True:
            await asyncio.sleep(self.tick_interval)
            self._put(Tick())

    async def _health(self) -> None:
        async for result in self.health.results():
            self._put(result)

    async def _tail(self) -> None:
        from tui.core.logparse import LogParser
        from tui.core.remedy_clues import ClueReader

        assert self.log_path is not None
        parser = LogParser()
        clues = ClueReader()  # what a remedy reads (tui/core/remedy_clues.py), from the same bytes
        history = HistoryRead(self._put)  # the bytes a look found written, marked as history
        async for event in LogTail(self.host, self.log_path).events():
            if isinstance(event, LogLook):
                history.begin(event)
                continue
            if isinstance(event, LogReset):
                if event.reason in _ENDS_HISTORY:
                    history.end()
                parser = LogParser()  # a new file or a new start: nothing of the old one carries over
                clues = ClueReader()
                if event.reason != "skipped":  # a skip between a launch's head and its end keeps what it says
                    self.health.uvicorn_up(False)
                self._put(event)
                continue
            self._put(event)
            if not isinstance(event, LogActivity):
                continue  # a LogFile fact (missing, rotated and followed, …): no bytes to parse
            try:
                parsed = parser.feed(event.data)
            except Exception:  # a parser bug must not stop the tail: log it, start a fresh parser
                log.exception("log parser failed")
                parser = LogParser()
                parsed = []
            for item in parsed:
                self._put(item)
                if isinstance(item, Milestone) and item.kind in HTTP_UP_MILESTONES:
                    self.health.uvicorn_up(True)
                elif isinstance(item, LaunchStarted):
                    self.health.uvicorn_up(False)
                    self.health.set_phase("starting")
                    relook = getattr(self.process_watch, "relook", None)
                    if relook is not None:  # the new launch's processes may be others: search afresh
                        relook()
            said = clues.feed(event.data)
            if said is not None:
                self._put(said)
            history.read_to(event.offset)

    async def _gpus(self) -> None:
        snapshots = (
            self._gpu_feed()
            if self._gpu_feed is not None
            else gpu_snapshots(
                self.host, remote_python=self.remote_python, interval=self.gpu_interval, sim_dir=self.sim_gpus
            )
        )
        async for snapshot in snapshots:
            self._put(snapshot)

    async def _processes(self) -> None:
        procs = self.process_watch or ProcessWatch(self.host, port=self.port, log_path=self.log_path)
        self.process_watch = procs  # the tail asks it to look again when the log shows a new launch
        # watch_process_events also says who listens on the port (PortOwner); a watch without it, only states.
        watch = getattr(procs, "watch_process_events", None) or getattr(procs, "watch_process_state", None)
        if watch is not None:
            # One long-lived loop on the host: a new channel (sshd session + login shell) per check costs
            # the host ~100 ms of CPU; the watch yields nothing while the host is unreachable.
            async for state in watch(self.process_interval, **({} if self._want_activity else {"activity": False})):
                if self._connection == "connected":
                    self._put(state)
            return
        while True:  # a watch without a loop of its own: poll it
            if self._connection == "connected":
                started = time.monotonic()
                polled: ServerProcess = await procs.process_state()
                # "Unknown" (the link dropped mid-scan) is not "dead": saying dead would fail the startup.
                if self._connection == "connected" and not polled.detail.startswith("process state unknown"):
                    self._put(polled)
                await asyncio.sleep(max(0.0, self.process_interval - (time.monotonic() - started)))
            else:
                await asyncio.sleep(0.5)
