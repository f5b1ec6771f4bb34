"""The fleet with a Slurm job among its servers, on the real 2-node Slurm cluster (tests/helpers/slurm.py): the
job's two nodes are one row (tp 16, its nodes named, node 0 first) beside a plain server; `slurm:` finds the job
itself; Enter on the job's row opens its nodes' view and Esc comes back; nothing of ours is left in the job
afterwards."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from tests.helpers.processes import Cli, PipeLines, Sims
from tests.helpers.slurm import NODE_LOG, NODES, SlurmCluster, sim_job
from tests.test_slurm import our_steps
from tui.commands.fleet_board import board_app
from tui.commands.fleet_watch import Fleet
from tui.commands.options import FleetOptions
from tui.commands.targets import fleet_target
from tui.core.state import Phase
from tui.sources.hostpool import HostPool
from tui.ui.deployment_app import DeploymentScreen, MembersPane


def test_a_job_is_one_row_beside_a_server(cluster: SlurmCluster, tmp_path: Path, sim: Sims, cli: Cli) -> None:
    job = sim_job(cluster, tmp_path / "job", per_node_logs=True)
    small = sim(speed=100.0, shards=8, speculative="none")
    inventory = tmp_path / "fleet.toml"
    inventory.write_text(
        f'[[server]]\nname = "big"\ntarget = "slurm:{job.job}"\nport = {job.port}\nlog = "{NODE_LOG}"\n'
        f'group = "cluster"\n[[server]]\nname = "small"\ntarget = "local:{small.port}:{small.log}"\n'
    )
    common = ["--remote-python", sys.executable, "--no-history"]
    stream = cli.popen("fleet", "--json", "--inventory", str(inventory), *common)
    assert stream.stdout is not None
    lines = PipeLines(stream.stdout)

    def latest() -> dict[str, dict[str, object]]:
        return {str(o["name"]): o for o in (json.loads(line) for line in list(lines.lines))}

    lines.wait_for(lambda _: [latest().get(n, {}).get("phase") for n in ("big", "small")] == ["ready"] * 2, 180)
    stream.send_signal(signal.SIGTERM)
    assert stream.wait(30) == 0
    big = latest()["big"]
    assert big["tp_size"] == 16 and sorted(big["ranks"]) == sorted(f"TP{i}" for i in range(16))  # type: ignore[call-overload]
    members = big["members"]
    assert isinstance(members, list) and [(m["name"], m["host"]) for m in members] == [
        ("node0", NODES[0]), ("node1", NODES[1])
    ]  # fmt: skip

    # `slurm:` is every running job of ours that runs SGLang: this one, named by its id
    once = cli("fleet", "--once", "slurm:", f"local:{small.port}:{small.log}", "--port", str(job.port),
               "--log", NODE_LOG, *common, timeout=180)  # fmt: skip
    assert once.returncode == 0, once.stdout + once.stderr
    rows = {line.split()[0]: line for line in once.stdout.splitlines()[1:]}
    assert sorted(rows) == sorted([f"slurm:{job.job}", f"local:{small.port}:{small.log}"])
    assert f"slurm {job.job}: {NODES[0]},{NODES[1]}" in rows[f"slurm:{job.job}"]
    assert " ready " in rows[f"slurm:{job.job}"]
    assert our_steps(cluster, job.job) == []  # the fleet's srun steps ended with it


def test_no_such_job_is_a_row_of_nothing(cluster: SlurmCluster, cli: Cli) -> None:
    once = cli("fleet", "--once", "slurm:999999", "--no-history", timeout=60)
    assert once.returncode == 6, once.stdout + once.stderr
    row = once.stdout.splitlines()[1]
    assert row.split()[:3] == ["slurm:999999", "slurm:999999", "nothing"] and "no Slurm job 999999" in row


async def test_enter_on_a_job_row_opens_its_nodes_and_esc_comes_back(cluster: SlurmCluster, tmp_path: Path) -> None:
    job = sim_job(cluster, tmp_path / "job", per_node_logs=True)
    args = FleetOptions(remote_python=sys.executable)  # no history: none recorded
    fleet = Fleet(args, HostPool(remote_python=sys.executable))
    await fleet.open([(fleet_target(f"slurm:{job.job}", port=job.port, log=NODE_LOG), "big", "")])
    fleet.start()
    app = board_app(args, fleet)
    try:
        async with app.run_test(size=(160, 45)) as pilot:

            async def until(condition: Callable[[], bool], what: str) -> None:
                for _ in range(2400):
                    if condition():
                        return
                    await pilot.pause(0.05)
                raise AssertionError(f"never: {what}")

            await until(lambda: fleet.entries[0].state.phase is Phase.READY, "the job ready")
            assert f"slurm {job.job}: {NODES[0]},{NODES[1]}" == str(app.table.get_row_at(0)[1])
            await pilot.press("enter")
            await until(lambda: isinstance(app.screen, DeploymentScreen), "the job's view opened")
            view = app.screen
            assert isinstance(view, DeploymentScreen)
            await until(lambda: {line.text[:7] for line in view.log_pane.view.lines} >= {"[node0]", "[node1]"},
                        "both nodes' logs shown")  # fmt: skip
            assert view.state.phase is Phase.READY and view.state.server.tp_size == 16
            members = str(view.query_one(MembersPane).render())
            assert "node0" in members and "node1" in members
            await pilot.press("escape")
            await until(lambda: app.screen is app.screen_stack[0], "back on the board")
    finally:
        await fleet.close()
    assert our_steps(cluster, job.job) == []
