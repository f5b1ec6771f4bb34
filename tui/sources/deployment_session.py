"""A whole deployment watched as one: one Monitor per member (tui/sources/deployment.py), each member's batch
folded into that member's own `Readiness` through its own Fold (the phase fed back to that member's Monitor),
the router poller's facts and the router's worker-health log lines into RouterInfo. `MemberFolder` serves
`wait` and the TUI alike; `DeploymentSession` gives the one wait loop (tui/sources/waiting.py) the deployment's
combined state after each batch, as `Session` does for one server."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from functools import partial

from tui.core import deployment as dm
from tui.core.control import ProcessWatchLike
from tui.core.events import LogActivity
from tui.core.fold import Fold
from tui.core.routerlog import RouterLog
from tui.core.srtlayout import BenchmarkWord
from tui.core.state import Phase, Readiness
from tui.sources.deployment import DeploymentMonitor, MemberSpec
from tui.sources.host import Host
from tui.sources.router import RouterStatus, router_statuses


def deployment_of(specs: list[MemberSpec], stall_after: float | None) -> dm.Deployment:
    return dm.Deployment(tuple(
        dm.Member(s.name, s.role, s.host, _start(s, stall_after), node_rank=s.node_rank, worker=s.worker,
                  bootstrap_port=s.bootstrap_port, router=dm.RouterInfo() if s.role == "router" else None)
        for s in specs
    ))  # fmt: skip


def _start(spec: MemberSpec, stall_after: float | None) -> Readiness:
    """A member's first state: the facts its watcher sets once, as `wait HOST` does (issue 17): whether its
    /health is probed and on which port, whether a log is tailed, and that its processes are watched (each
    member's Monitor runs the process watch), so an old log never vouches for someone else's 200."""
    probed = spec.health
    return Readiness.of(
        stall_after=stall_after,
        health_probed=True if probed else None,
        health_port=spec.port if probed else None,
        log_watched=bool(spec.log),
        process_watched=True,
    )


class MemberFolder:
    """Folds one member's batch into the deployment: reducer events into its Readiness through its own Fold
    (the phase fed back to that member's Monitor), the router poller's facts and the router's worker-health
    log lines into RouterInfo (shared by `wait` and the TUI)."""

    def __init__(self, dep: dm.Deployment, set_phase: Callable[[str, Phase], None] | None = None) -> None:
        self.router_logs = {m.name: RouterLog() for m in dep.members if m.role == "router"}
        self.folds = {
            m.name: Fold(feedback=partial(set_phase, m.name) if set_phase is not None else None) for m in dep.members
        }

    def __call__(self, dep: dm.Deployment, name: str, batch: list[object], now: float) -> dm.Deployment:
        events = [event for event in batch if not isinstance(event, (RouterStatus, BenchmarkWord))]
        state = self.folds[name](dep.member(name).state, events, now)  # type: ignore[arg-type]
        dep = dep.with_state(name, state)
        for word in (item for item in batch if isinstance(item, BenchmarkWord)):
            dep = dep.with_benchmark(word)  # an srtctl job's benchmark word (srt_members.words): the deployment's
        return _router_facts(dep, name, batch, self.router_logs.get(name))


def _router_facts(dep: dm.Deployment, name: str, batch: list[object], log: RouterLog | None = None) -> dm.Deployment:
    """The router poller's facts (the router's RouterInfo, the prefill members' bootstrap ports) and the
    router's own worker-health log lines."""
    for item in batch:
        member = dep.member(name)
        if log is not None and isinstance(item, LogActivity) and log.feed(item.data) and member.router is not None:
            dep = dep.with_member(replace(member, router=replace(member.router, log_workers=log.snapshot())))
            continue
        if not isinstance(item, RouterStatus):
            continue
        if member.role == "router":
            logged = member.router.log_workers if member.router is not None else ()
            dep = dep.with_member(replace(member, router=replace(item.info, log_workers=logged)))
        for m in dep.members:
            if item.bootstrap is not None and m.name in item.bootstrap:
                dep = dep.with_member(replace(m, bootstrap_open=item.bootstrap[m.name]))
    return dep


def deployment_monitor(
    specs: list[MemberSpec],
    hosts: list[Host],
    remote_python: str,
    process_watch: Callable[[MemberSpec, Host], ProcessWatchLike] | None = None,
) -> DeploymentMonitor:
    """One Monitor per member, and the router's poller (for `wait` and the TUI alike)."""
    monitor = DeploymentMonitor.build(
        list(zip(specs, hosts, strict=True)), remote_python=remote_python, process_watch=process_watch
    )
    add_router_pollers(monitor, specs, hosts)
    return monitor


def add_router_pollers(monitor: DeploymentMonitor, specs: list[MemberSpec], hosts: list[Host]) -> None:
    """One poller for the router's health and workers and the prefill bootstrap ports (when there are any)."""
    router = next(((s, h) for s, h in zip(specs, hosts, strict=True) if s.role == "router"), None)
    prefills = [(s.name, h, s.bootstrap_port or 8998) for s, h in zip(specs, hosts, strict=True)
                if s.role == "prefill" and not s.follower]  # a worker's node 0 serves its bootstrap  # fmt: skip
    if router is None and not prefills:
        return
    name = router[0].name if router is not None else prefills[0][0]
    monitor.add_stream(name, router_statuses((router[1], router[0].port) if router else None, prefills))


class DeploymentSession:
    """A DeploymentMonitor, the MemberFolder its batches go through, and the deployment so far; `state` is its
    combined state (tui.core.deployment.combined), which carries the deployment for its words."""

    settles = False  # a deployment's verdict stands as folded: no last look, no settling moment

    def __init__(
        self, monitor: DeploymentMonitor, dep: dm.Deployment, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.monitor = monitor
        self.dep = dep
        self.folder = MemberFolder(dep, monitor.set_phase)
        self.state: Readiness = dm.combined(dep)
        self.clock = clock

    async def states(self) -> AsyncIterator[tuple[Readiness, float]]:
        """(combined state, clock time) after each member's batch, until the monitor is closed."""
        async for name, batch in self.monitor.batches():
            now = self.clock()
            self.dep = self.folder(self.dep, name, batch, now)
            self.state = dm.combined(self.dep)
            yield self.state, now

    async def check_alive(self) -> Readiness:
        return self.state  # never asked (settles is False): a deployment makes no last look of its own

    async def close(self) -> None:
        await self.monitor.close()
