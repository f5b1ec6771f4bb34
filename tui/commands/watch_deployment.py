"""`sglang-tui HOST0 HOST1 …` / `sglang-tui --deployment FILE`: the TUI over a whole deployment.

One Monitor per member (tui/sources/deployment.py), folded by the same MemberFolder as `wait`; the app is
watch only (stop a deployment with `sglang-tui stop HOST0 HOST1 …`)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from tui.commands.wait_deployment import (
    MemberFolder,
    add_router_pollers,
    deployment_of,
    make_member_host,
    specs_from_args,
)
from tui.core import deployment as dm
from tui.sources.deployment import DeploymentMonitor, connect_members


async def watch(args: argparse.Namespace) -> int:
    from tui.ui.app import UiSources
    from tui.ui.deployment_app import DeploymentTui

    try:
        specs = specs_from_args(args)
    except ValueError as err:
        print(f"sglang-tui: {err}", file=sys.stderr)
        return 2
    hosts = [make_member_host(args, spec.host) for spec in specs]
    try:
        problem = await connect_members(specs, hosts)
        if problem is not None:
            print(f"sglang-tui: {problem}", file=sys.stderr)
            return 4
        monitor = DeploymentMonitor.build(list(zip(specs, hosts, strict=True)), remote_python=args.remote_python)
        add_router_pollers(monitor, specs, hosts)
        dep = deployment_of(specs, getattr(args, "stall_after", None))
        folder = MemberFolder(dep)

        def fold(current: dm.Deployment, name: str, items: list[Any], now: float) -> dm.Deployment:
            after = folder(current, name, items, now)
            monitor.set_phase(name, after.member(name).state.phase)
            return after

        label = " ".join(s.host for s in specs) if len({s.host for s in specs}) > 1 else specs[0].host
        sources = UiSources(batches=_no_batches, control=None, host_label=label, port=specs[0].port)
        app = DeploymentTui(sources, dep, monitor.batches, fold)
        try:
            await app.run_async()
        finally:
            await monitor.close()
        return 0
    finally:
        await asyncio.gather(*(h.close() for h in hosts), return_exceptions=True)


async def _no_batches() -> Any:  # the app reads member batches instead (DeploymentTui._consume)
    return
    yield


def run(args: argparse.Namespace) -> int:
    return asyncio.run(watch(args))
