"""The process watch of one server inside a Slurm job (tui/sources/slurm_procs.py), on the real 2-node cluster: a
look that sees the job's SGLang server on the node, but on another port than the one it was asked for, says
"unknown" with what it saw, never "no process of the server is left" (issue 36's flake: a worker watched on a port
its log had not named yet read exited while it served); a look that sees it on its port says it lives."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from tests.helpers.slurm import NODES, SlurmCluster, sim_job
from tests.helpers.sshd import free_port
from tui.sources.local import LocalHost
from tui.sources.slurm import SrunHost
from tui.sources.slurm_procs import SlurmProcessWatch


async def test_a_server_on_another_port_is_unknown_never_gone(cluster: SlurmCluster, tmp_path: Path) -> None:
    sim = sim_job(cluster, tmp_path)
    host = SrunHost(LocalHost(), sim.job, NODES[0], remote_python=sys.executable)
    wrong = free_port()
    try:
        await host.connect()
        right = SlurmProcessWatch(host, job_id=sim.job, node=NODES[0], port=sim.port)
        deadline = time.monotonic() + 90
        seen = await right.process_state_now()
        while not (seen.alive and seen.titled) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)  # the simulator's ranks come a moment after the job runs
            seen = await right.process_state_now()
        assert seen.alive is True and seen.titled, seen
        other = SlurmProcessWatch(host, job_id=sim.job, node=NODES[0], port=wrong)
        state = await other.process_state()
        assert state.alive is None and state.visible, state  # unknown: never "gone"
        assert f"(port {sim.port}), none on port {wrong}" in state.detail, state.detail
    finally:
        await host.close()
