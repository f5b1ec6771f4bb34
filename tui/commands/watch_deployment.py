"""`sglang-tui HOST0 HOST1 …` / `sglang-tui --deployment FILE`: the TUI over a whole deployment.

One Monitor per member (tui/sources/deployment.py), folded by the same MemberFolder as `wait`; the app is
watch only (stop a deployment with `sglang-tui stop HOST0 HOST1 …`)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from tui.commands.members import close_all, connect_all
from tui.commands.wait_deployment import MemberFolder, add_router_pollers, deployment_of
from tui.sources.deployment import DeploymentMonitor


async def watch(args: argparse.Namespace) -> int:
    from tui.ui.app import UiSources
    from tui.ui.deployment_app import DeploymentTui

    found = await connect_all(args, lambda line: print(f"sglang-tui: {line}", file=sys.stderr))
    if isinstance(found, int):
        return found
    specs, hosts = found
    try:
        monitor = DeploymentMonitor.build(list(zip(specs, hosts, strict=True)), remote_python=args.remote_python)
        add_router_pollers(monitor, specs, hosts)
        dep = deployment_of(specs, getattr(args, "stall_after", None))
        folder = MemberFolder(dep, monitor.set_phase)  # each member's phase fed back to its own Monitor
        label = " ".join(s.host for s in specs) if len({s.host for s in specs}) > 1 else specs[0].host
        sources = UiSources(batches=_no_batches, control=None, host_label=label, port=specs[0].port)
        app = DeploymentTui(sources, dep, monitor.batches, folder)
        try:
            await app.run_async()
        finally:
            await monitor.close()
        return 0
    finally:
        await close_all(hosts)


async def _no_batches() -> Any:  # the app reads member batches instead (DeploymentTui._consume)
    return
    yield


def run(args: argparse.Namespace) -> int:
    return asyncio.run(watch(args))
