"""Watching a whole deployment: one `Monitor` per member (one connection per host, each reconnecting on its
own), merged into one stream of (member name, batch of events).

Which member gets which sources is decided here: every member tails its log, watches its processes and reads
its GPUs; HTTP health is probed only where it means something (node 0 of a multi-node server: the other nodes
serve only a dummy /health that answers 200 from the start; each PD server; the router through
`RouterPoller`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from tui.core.control import ProcessWatchLike
from tui.core.events import HealthResult
from tui.sources.health import HealthPoller
from tui.sources.host import Host, HostError
from tui.sources.monitor import Monitor
from tui.sources.procwatch import ProcessWatch


class NoHealth(HealthPoller):
    """A member whose /health is not a fact of the deployment (a non-zero node): no probe at all."""

    async def results(self) -> AsyncIterator[HealthResult]:
        await asyncio.Event().wait()  # forever, without a request
        nothing: tuple[HealthResult, ...] = ()
        for never in nothing:  # the loop only makes this an async generator
            yield never


@dataclass
class MemberSpec:
    """Where one member runs and what to watch of it (a deployment file's entry, or one HOST[:PATH] argument)."""

    name: str
    role: str  # node | prefill | decode | router | server
    host: str
    port: int = 30000
    log: str | None = None
    node_rank: int | None = None
    bootstrap_port: int | None = None
    sim_gpus: str | None = None
    extra: dict[str, object] = field(default_factory=dict)
    worker: str | None = None  # a node of a PD worker that spans several nodes: the worker (its node 0's name)

    @property
    def follower(self) -> bool:
        """A non-zero node (of a multi-node server, or of a PD worker on several nodes): it serves no HTTP."""
        return (self.role == "node" or self.worker is not None) and self.node_rank not in (None, 0)

    @property
    def health(self) -> bool:
        return self.role != "router" and not self.follower

    @property
    def process_port(self) -> int | None:
        """The port that names this member's processes: none for a non-zero node with a log (it shares node 0's
        port, which on node 0's host is node 0's listener, or names none: its log alone names it), else its port."""
        return None if self.follower and self.log else self.port


def split_host_path(spec: str) -> tuple[str, str | None]:
    """`HOST:/abs/path` → (HOST, /abs/path); `HOST` → (HOST, None). A path after the colon must be absolute."""
    at = spec.find(":/")
    if at <= 0:
        if ":" in spec and not spec.startswith("["):
            host, _, rest = spec.partition(":")
            raise ValueError(f"{spec}: the log path after the colon must be absolute (e.g. {host}:/var/log/{rest})")
        return spec, None
    return spec[:at], spec[at + 1 :]


def node_specs(hosts: list[str], *, log: str | None, port: int, sim_gpus: str | None = None) -> list[MemberSpec]:
    """The members of a multi-node server from `HOST0 HOST1 …` (node 0 first). `--log` applies to every node
    without its own `HOST:PATH`. `sim_gpus` (tests, demos): one directory, or one per node joined by commas."""
    gpus = (sim_gpus or "").split(",") if sim_gpus else []
    specs = []
    for rank, arg in enumerate(hosts):
        host, path = split_host_path(arg)
        gpu = gpus[rank] if rank < len(gpus) else (gpus[-1] if gpus else None)
        specs.append(MemberSpec(f"node{rank}", "node", host, port, path or log, rank, sim_gpus=gpu or None))
    return specs


class DeploymentMonitor:
    """Runs one Monitor per member; `batches()` yields (member name, events) until `close()`."""

    def __init__(self, members: list[tuple[MemberSpec, Monitor]]) -> None:
        self.members = members
        self._queue: asyncio.Queue[tuple[str, list[Any]]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._streams: list[tuple[str, AsyncIterator[Any]]] = []
        self._closed = False

    def add_stream(self, name: str, items: AsyncIterator[Any]) -> None:
        """Another source of one member's facts (the router's poller): each item comes as its own batch."""
        self._streams.append((name, items))

    @classmethod
    def build(
        cls,
        specs: list[tuple[MemberSpec, Host]],
        *,
        remote_python: str = "python3",
        process_watch: Callable[[MemberSpec, Host], ProcessWatchLike] | None = None,
    ) -> DeploymentMonitor:
        """One Monitor per member; `process_watch` builds a member's process watch (None: the usual one, found
        by port and log; a Slurm job's nodes find theirs among the job's processes)."""
        pairs = []
        for spec, host in specs:
            health = None if spec.health else NoHealth(host, spec.port)
            if process_watch is not None:
                watch: ProcessWatchLike = process_watch(spec, host)
            else:
                watch = ProcessWatch(host, port=spec.process_port, log_path=spec.log)
            monitor = Monitor(host, log_path=spec.log, port=spec.port, remote_python=remote_python,
                              sim_gpus=spec.sim_gpus, health=health, gpus=spec.role != "router",
                              process_watch=watch)  # fmt: skip
            pairs.append((spec, monitor))
        return cls(pairs)

    def set_phase(self, name: str, phase: object) -> None:
        for spec, monitor in self.members:
            if spec.name == name:
                monitor.set_phase(phase)

    async def batches(self) -> AsyncIterator[tuple[str, list[Any]]]:
        """(member name, items): a Monitor's batch of reducer events, or one item of an added stream."""
        if not self._tasks:
            self._tasks = [asyncio.ensure_future(self._pump(spec.name, m)) for spec, m in self.members]
            self._tasks += [asyncio.ensure_future(self._pump_stream(name, items)) for name, items in self._streams]
        try:
            while not self._closed:
                yield await self._queue.get()
        finally:
            await self.close()

    async def _pump(self, name: str, monitor: Monitor) -> None:
        async for batch in monitor.batches():
            self._queue.put_nowait((name, batch))

    async def _pump_stream(self, name: str, items: AsyncIterator[Any]) -> None:
        async for item in items:
            self._queue.put_nowait((name, [item]))

    async def close(self) -> None:
        self._closed = True
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(m.close() for _, m in self.members), return_exceptions=True)


async def connect_members(specs: list[MemberSpec], hosts: list[Host]) -> str | None:
    """Connect every member's host at once: None when all connected, else the first failure as one line
    ("cannot connect to node1 (host): …"); anything but a connection problem is raised."""
    results = await asyncio.gather(*(h.connect() for h in hosts), return_exceptions=True)
    for spec, result in zip(specs, results, strict=True):
        if isinstance(result, (HostError, OSError, ValueError)):
            return f"cannot connect to {spec.name} ({spec.host}): {result}"
        if isinstance(result, BaseException):
            raise result
    return None
