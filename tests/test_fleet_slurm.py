"""The fleet with a Slurm job among its servers, on the real 2-node Slurm cluster (tests/helpers/slurm.py): the
job's two nodes are one row (tp 16, its nodes named, node 0 first) beside a plain server; `slurm:` finds the job
itself; nothing of ours is left in the job afterwards."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, PipeLines, Sims
from tests.helpers.slurm import NODE_LOG, NODES, SlurmCluster, sim_job
from tests.test_slurm import our_steps


@pytest.fixture
def cluster(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    yield slurm_cluster
    slurm_cluster.cancel_all()


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
    assert big["tp_size"] == 16 and sorted(big["ranks"]) == sorted(f"TP{i}" for i in range(16))  # type: ignore[arg-type]
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
