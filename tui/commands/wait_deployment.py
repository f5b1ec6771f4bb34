"""`sglang-tui wait HOST0 HOST1 …` and `wait --deployment FILE`: wait for a whole deployment.

Each member's events fold into that member's own `Readiness` (the single-server reducer); the deployment
model (tui/core/deployment.py) derives the one state whose phase, reason, stall and error decide the exit,
with the same codes as `wait HOST`: 0 ready, 1 failed, 2 timed out, 3 stalled, 4 cannot connect.
With --json every change is one line carrying the `replay --json` keys plus "members".
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TextIO

from tui.commands.members import with_members
from tui.commands.options import WaitOptions
from tui.commands.wait import EXIT_FAILED, EXIT_TIMEOUT, Reporter, Verdict, verdict
from tui.core import deployment as dm
from tui.core import fmt
from tui.core.control import ProcessWatchLike
from tui.core.events import LogActivity
from tui.core.fold import Fold
from tui.core.routerlog import RouterLog
from tui.core.state import Phase, Readiness
from tui.sources.deployment import DeploymentMonitor, MemberSpec
from tui.sources.host import Host
from tui.sources.router import RouterStatus, router_statuses


class DeploymentReporter(Reporter):
    """`wait`'s reporter, whose JSON lines are the deployment's (with "members")."""

    def __init__(self, json_out: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        super().__init__(json_out, out, err)
        self.dep: dm.Deployment | None = None

    def emit_json(self, state: Readiness, *, force: bool) -> None:
        if self.dep is None:
            return super().emit_json(state, force=force)
        text = json.dumps(dm.to_json(self.dep), ensure_ascii=False)
        if text != self._last_json or (force and self._last_json is None):
            self._write(self.out, text)
            self._last_json = text
        return None


def deployment_of(specs: list[MemberSpec], stall_after: float | None) -> dm.Deployment:
    return dm.Deployment(tuple(
        dm.Member(s.name, s.role, s.host, _start(s, stall_after), node_rank=s.node_rank,
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


async def fold_deployment(
    monitor: DeploymentMonitor, dep: dm.Deployment, reporter: DeploymentReporter, *, timeout: float | None,
    clock: Callable[[], float] = time.time,
) -> tuple[Verdict, dm.Deployment]:  # fmt: skip
    start = clock()
    reporter.dep = dep
    folder = MemberFolder(dep, monitor.set_phase)

    async def fold() -> Verdict | None:
        nonlocal dep
        async for name, batch in monitor.batches():
            now = clock()
            dep = folder(dep, name, batch, now)
            reporter.dep = dep
            whole = dm.combined(dep)
            reporter.update(whole, now - start)
            found = verdict(whole)
            if found is not None and found.code == EXIT_FAILED:  # which member failed, and why
                return Verdict(EXIT_FAILED, dm.reason(dep))
            if found is not None:
                return found
        return None

    try:
        found = await asyncio.wait_for(fold(), timeout)
        if found is not None:
            return found, dep
    except asyncio.TimeoutError:
        pass
    finally:
        await monitor.close()
    whole = dm.combined(dep)
    return Verdict(EXIT_TIMEOUT, f"timed out after {fmt.duration(timeout)} in {whole.phase.value}: {whole.reason}"), dep


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
        events = [event for event in batch if not isinstance(event, RouterStatus)]
        state = self.folds[name](dep.member(name).state, events, now)  # type: ignore[arg-type]
        dep = dep.with_state(name, state)
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
    prefills = [(s.name, h, s.bootstrap_port or 8998) for s, h in zip(specs, hosts, strict=True) if s.role == "prefill"]
    if router is None and not prefills:
        return
    name = router[0].name if router is not None else prefills[0][0]
    monitor.add_stream(name, router_statuses((router[1], router[0].port) if router else None, prefills))


async def wait_members(
    opts: WaitOptions,
    reporter: DeploymentReporter,
    started: float,
    specs: list[MemberSpec],
    hosts: list[Host],
    process_watch: Callable[[MemberSpec, Host], ProcessWatchLike] | None = None,
) -> int:
    """Watch the connected members until the deployment's verdict (or --timeout, counted from `started`)."""
    monitor = deployment_monitor(specs, hosts, opts.server.remote_python, process_watch)
    remaining = None if opts.timeout is None else max(0.0, opts.timeout - (time.monotonic() - started))
    dep = deployment_of(specs, opts.server.stall_after)
    found, dep = await fold_deployment(monitor, dep, reporter, timeout=remaining)
    if opts.json:
        reporter.emit_json(dm.combined(dep), force=True)
    reporter.say(f"sglang-tui wait: {found.line}")
    return found.code


async def _main(opts: WaitOptions) -> int:
    reporter = DeploymentReporter(opts.json)
    started = time.monotonic()
    return await with_members(
        opts.target,
        opts.server,
        lambda line: reporter.say(f"sglang-tui wait: {line}"),
        partial(wait_members, opts, reporter, started),
        timeout=opts.timeout,
    )


def run(opts: WaitOptions) -> int:
    return asyncio.run(_main(opts))
