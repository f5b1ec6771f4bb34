"""Cost on the laptop of watching a deployment (a script, not a test): CPU per minute of the headless watch
(`wait`'s fold: one Monitor per node over SSH, the deployment model per batch) on one node against two.

Each node is a simulated node of a 2x8 launch at ready (quiet: no traffic), reached through a loopback sshd
(one SSH connection per node, as `sglang-tui wait node0 node1` makes). The single-node figure watches node 0
alone with the same code path. `python bench/bench_deployment_cost.py [--seconds 30]`
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from bench_common import PY, loopback_sshd, md_table, section, self_cpu_s, ssh_host

from tests.helpers.sim import start_nodes
from tui.core import deployment as dm
from tui.core.wording import deployment_line
from tui.sources.deployment import DeploymentMonitor, node_specs
from tui.sources.deployment_session import MemberFolder, deployment_of

WARMUP_S = 3.0


async def watch(sshd, logs: list[str], port: int, gpus: list[str], seconds: float) -> tuple[float, int, str]:  # type: ignore[no-untyped-def]
    """(CPU seconds of this process over `seconds`, batches folded, the final verdict)."""
    specs = node_specs([f"node{i}:{log}" for i, log in enumerate(logs)], log=None, port=port, sim_gpus=",".join(gpus))
    hosts = [ssh_host(sshd) for _ in specs]
    for host in hosts:
        await host.connect()
    monitor = DeploymentMonitor.build(list(zip(specs, hosts, strict=True)), remote_python=PY)
    dep = deployment_of(specs, None)
    fold = MemberFolder(dep)
    batches = 0
    start_cpu = 0.0
    measuring = False
    deadline = time.monotonic() + WARMUP_S + seconds

    async def run() -> None:
        nonlocal dep, batches, start_cpu, measuring
        async for name, batch in monitor.batches():
            dep = fold(dep, name, batch, time.time())
            dm.combined(dep)  # what every batch costs wait and the TUI
            if measuring:
                batches += 1

    task = asyncio.ensure_future(run())
    await asyncio.sleep(WARMUP_S)
    start_cpu, measuring = self_cpu_s(), True
    await asyncio.sleep(max(0.0, deadline - time.monotonic()))
    used = self_cpu_s() - start_cpu
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await monitor.close()
    for host in hosts:
        await host.close()
    return used, batches, deployment_line(dep)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-deploy-") as tmp, loopback_sshd() as sshd:
        nodes = start_nodes(Path(tmp), shards=8, speed=200, speculative="none")
        try:
            deadline = time.monotonic() + 90
            while b"fired up" not in nodes[0].log.read_bytes():
                if time.monotonic() > deadline:
                    sys.exit("the simulated nodes did not reach ready")
                time.sleep(0.1)
            logs = [str(n.log) for n in nodes]
            gpus = [str(n.gpu_state) for n in nodes]
            rows = []
            for count in (1, 2):
                used, batches, verdict = asyncio.run(
                    watch(sshd, logs[:count], nodes[0].port, gpus[:count], args.seconds)
                )
                per_min = used * 60.0 / args.seconds
                rows.append((f"{count} node{'s' if count > 1 else ''}", f"{per_min:.2f} s", f"{100 * used / args.seconds:.2f}%",
                             f"{batches * 60.0 / args.seconds:.0f}", verdict))  # fmt: skip
        finally:
            for node in nodes:
                node.stop()
    table = md_table(("watching", "CPU per minute", "of one core", "batches per minute", "verdict"), rows)
    print(
        section(
            "Laptop CPU: watching two nodes against one",
            table,
            (
                "Headless watch (`wait`'s fold) of quiet simulated nodes at ready, one SSH connection per node to a loopback sshd.",
                f"Measured over {args.seconds:g} s after a {WARMUP_S:g} s warm-up; the machine is shared, so figures vary.",
            ),
            "python bench/bench_deployment_cost.py",
        )
    )


if __name__ == "__main__":
    main()
