"""One connection per host for every server watched there, and one GPU probe per host: what a fleet costs.

`HostPool.host(spec)` gives every server on one SSH destination (the same HostSpec) the same Host: one SSH
connection (asyncssh), and on it ONE mux agent (tui/sources/mux_agent.py, as a Slurm node's) that runs every
command of every server there: the log tails, the process watches, the short commands. sshd's MaxSessions
counts exec channels per connection (the default is 10; a dozen servers need three long-lived channels each),
so the agent keeps it at one; HTTP goes through the connection's port forwards, which are no sessions. `local`
is one LocalHost. `HostPool.gpus(host)` is that host's one GPU probe, its snapshots handed to every server's
Monitor there (a host's GPUs are the same whoever looks).

Shared by `fleet` and `export` (several TARGETs on one host); closed once, by the pool, after every Monitor.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from tui.core.events import GpuSnapshot
from tui.sources.connect import HostSpec, make_host
from tui.sources.gpu import gpu_snapshots
from tui.sources.host import Host
from tui.sources.muxhost import MuxHost, agent_command

BACKLOG = 4  # snapshots a slow Monitor may fall behind before the oldest are dropped (its GPUs are then current)


class SshMuxHost(MuxHost):
    """Every command of one SSH host through one mux agent on one connection; HTTP through its forwards."""

    def __init__(self, ssh: Host, remote_python: str = "python3") -> None:
        super().__init__(ssh, agent_command(remote_python), name=ssh.name)

    async def http_base_url(self, port: int) -> str:
        return await self.base.http_base_url(port)

    async def url_to(self, host: str, port: int) -> str:
        return await self.base.url_to(host, port)


class SharedGpus:
    """One GPU probe on a host, its snapshots fanned out to every subscriber (each Monitor of a server there).
    It runs while someone subscribes: started by the first, stopped after the last."""

    def __init__(self, host: Host, *, remote_python: str = "python3", interval: float = 1.0,
                 sim_dir: str | None = None) -> None:  # fmt: skip
        self.host = host
        self.remote_python = remote_python
        self.interval = interval
        self.sim_dir = sim_dir
        self._queues: set[asyncio.Queue[GpuSnapshot]] = set()
        self._task: asyncio.Task[None] | None = None
        self._last: GpuSnapshot | None = None
        self.started = 0  # probes started so far (tests and benches read it)

    async def snapshots(self) -> AsyncIterator[GpuSnapshot]:
        """The host's snapshots from now on (the latest one first, when the probe already runs)."""
        queue: asyncio.Queue[GpuSnapshot] = asyncio.Queue()
        if self._last is not None:
            queue.put_nowait(self._last)
        self._queues.add(queue)
        if self._task is None or self._task.done():
            self.started += 1
            self._task = asyncio.ensure_future(self._pump())
        try:
            while True:
                yield await queue.get()
        finally:
            self._queues.discard(queue)
            if not self._queues and self._task is not None:
                task, self._task = self._task, None
                task.cancel()
                # gather, not suppress(CancelledError): a cancel of the reader itself must not be swallowed here
                await asyncio.gather(task, return_exceptions=True)

    async def _pump(self) -> None:
        async for snapshot in gpu_snapshots(
            self.host, remote_python=self.remote_python, interval=self.interval, sim_dir=self.sim_dir
        ):
            self._last = snapshot
            for queue in self._queues:
                while queue.qsize() >= BACKLOG:
                    queue.get_nowait()
                queue.put_nowait(snapshot)


class HostPool:
    """The hosts of a fleet, one per HostSpec, and one SharedGpus per host (and simulated GPU directory)."""

    def __init__(self, *, remote_python: str = "python3", make: Callable[[HostSpec], Host] = make_host,
                 mux: bool = True) -> None:  # fmt: skip
        self.remote_python = remote_python
        self._make = make
        self._mux = mux
        self._hosts: dict[HostSpec, Host] = {}
        self._bases: dict[HostSpec, Host] = {}
        self._gpus: dict[tuple[int, str | None], SharedGpus] = {}

    def base(self, spec: HostSpec) -> Host:
        """The host's own connection (SSH, or this machine), for what must run beside the agent (Slurm's srun)."""
        if spec not in self._bases:
            self._bases[spec] = self._make(spec)
        return self._bases[spec]

    def host(self, spec: HostSpec, remote_python: str | None = None) -> Host:
        """The Host every server on this destination shares (commands through one agent over SSH, run by
        `remote_python` where the first server there names its own, else the pool's)."""
        if spec not in self._hosts:
            base = self.base(spec)
            python = remote_python or self.remote_python
            self._hosts[spec] = SshMuxHost(base, python) if self._mux and spec.host != "local" else base
        return self._hosts[spec]

    def gpus(
        self, host: Host, sim_dir: str | None = None, interval: float = 1.0, remote_python: str | None = None
    ) -> Callable[[], AsyncIterator[GpuSnapshot]]:
        """The host's one GPU probe, as the Monitor's `gpu_feed` takes it (run by the first server's Python)."""
        key = (id(host), sim_dir)
        if key not in self._gpus:
            python = remote_python or self.remote_python
            self._gpus[key] = SharedGpus(host, remote_python=python, interval=interval, sim_dir=sim_dir)
        return self._gpus[key].snapshots

    @property
    def connections(self) -> int:
        return len(self._bases)

    async def close(self) -> None:
        """Close the agents, then the connections under them."""
        agents = [h for spec, h in self._hosts.items() if h is not self._bases.get(spec)]
        await asyncio.gather(*(h.close() for h in agents), return_exceptions=True)
        await asyncio.gather(*(h.close() for h in self._bases.values()), return_exceptions=True)
