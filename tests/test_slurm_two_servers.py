"""`stop slurm:JOB --port A` on a job that runs two servers (two models on one node, each its own srun step), on
the real cluster: only the server on port A stops; the job, and server B in it, keep running, and the line says
what still runs and how to cancel anyway. The last server's stop cancels the job."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

from tests.helpers.processes import Cli
from tests.helpers.slurm import NODES, SlurmCluster
from tests.helpers.sshd import free_port
from tests.test_slurm import job_processes


def _two_servers(root: Path, ports: tuple[int, int]) -> str:
    repo = Path(__file__).resolve().parent.parent
    steps = "".join(
        f"srun -N1 -n1 --overlap -o {root}/{name}.log {sys.executable} -m tui simulate --log /dev/stdout "
        f"--port {port} --tp 2 --gpu-state {root}/gpus-{name} --shards 4 --speed 100 --speculative none &\n"
        for name, port in zip("ab", ports, strict=True)
    )
    return f"#!/bin/sh\nexport PYTHONPATH={repo}\n{steps}wait\n"


def _health(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://{NODES[0]}:{port}/health", timeout=30) as answer:
            return int(answer.status)
    except OSError:
        return 0


def _args(root: Path, name: str, port: int) -> list[str]:
    return ["--port", str(port), "--remote-python", sys.executable, "--sim-gpus", str(root / f"gpus-{name}"),
            "--log", str(root / f"{name}.log")]  # fmt: skip


def test_stop_port_a_leaves_b_serving_and_the_job_running(cluster: SlurmCluster, tmp_path: Path, cli: Cli) -> None:
    a, b = free_port(), free_port()
    job = cluster.sbatch(_two_servers(tmp_path, (a, b)), "-N1", "-w", NODES[0], "-J", "two", "--oversubscribe",
                         cwd=tmp_path)  # fmt: skip
    cluster.wait_running(job)
    for name, port in (("a", a), ("b", b)):
        ready = cli("wait", f"slurm:{job}", *_args(tmp_path, name, port), "--timeout", "120", "--json", timeout=180)
        assert ready.returncode == 0, ready.stderr
        assert json.loads(ready.stdout.splitlines()[-1])["phase"] == "ready"
    stopped = cli("stop", f"slurm:{job}", *_args(tmp_path, "a", a), "--grace", "5", timeout=180)
    assert stopped.returncode == 0, stopped.stderr + stopped.stdout
    assert "GPU memory released" in stopped.stdout, stopped.stdout
    last = stopped.stdout.splitlines()[-1]
    assert last.startswith(f"kept slurm job {job} running: still in it on {NODES[0]}: pid "), last
    assert "sglang::" in last and f"sglang-tui stop slurm:{job} --cancel-job (or scancel {job})" in last, last
    assert cluster.state(job) == "RUNNING"
    assert _health(a) == 0 and _health(b) == 200  # A is gone, B still serves
    again = cli("wait", f"slurm:{job}", *_args(tmp_path, "b", b), "--timeout", "120", timeout=180)
    assert again.returncode == 0, again.stderr
    last_stop = cli("stop", f"slurm:{job}", *_args(tmp_path, "b", b), "--grace", "5", timeout=180)
    assert last_stop.returncode == 0, last_stop.stderr + last_stop.stdout
    assert last_stop.stdout.splitlines()[-1].startswith(f"cancelled slurm job {job}: ")
    assert cluster.state(job) == "" and job_processes(job) == []
