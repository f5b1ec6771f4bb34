"""Slurm (a script, not a test): how fast the test cluster comes up, what a command inside a job costs through
the one srun step per node against an srun per command, and `wait` / `stop` on a simulated TP16 job.

The real 2-node cluster of the tests (tests/helpers/slurm.py: slurmctld, two `slurmd -N`, munge; root
needed). `python bench/bench_slurm.py [--trials 3] [--runs 20]`
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import PY, ROOT, md_table, section

from bench.results import CANNOT_RUN_HERE
from tests.helpers.slurm import NODE_LOG, NODES, SlurmCluster, sim_job, slurm_missing


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms" if values else "-"


def _s(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} s" if values else "-"


async def _through_agent(job: str, runs: int) -> tuple[float, list[float]]:
    """(seconds to start the node's agent, seconds per `true` through it)."""
    from tui.sources.local import LocalHost
    from tui.sources.slurm import SrunHost

    host = SrunHost(LocalHost(), job, NODES[1], remote_python=PY)
    began = time.monotonic()
    await host.connect()
    started = time.monotonic() - began
    each = []
    for _ in range(runs):
        t = time.monotonic()
        await host.run("true")
        each.append(time.monotonic() - t)
    await host.close()
    return started, each


def _srun_each(job: str, runs: int, env: dict[str, str]) -> list[float]:
    each = []
    for _ in range(runs):
        t = time.monotonic()
        subprocess.run(["srun", f"--jobid={job}", "--overlap", "-w", NODES[1], "-N1", "-n1", "--quiet", "true"],
                       env=env, check=True, capture_output=True, timeout=60)  # fmt: skip
        each.append(time.monotonic() - t)
    return each


def _tui(*args: str) -> float:
    t = time.monotonic()
    done = subprocess.run([PY, "-m", "tui", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"sglang-tui {args[0]} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return time.monotonic() - t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    missing = slurm_missing()
    if missing:  # bench_all.py says "not run here" (a failure under CI, which installs Slurm)
        print(f"no Slurm here: {missing}", file=sys.stderr)
        raise SystemExit(CANNOT_RUN_HERE)
    up, down, first, later, agent, mux, srun, waits, stops = [], [], [], [], [], [], [], [], []
    for _ in range(args.trials):
        root = Path(tempfile.mkdtemp(prefix="sgltui-bench-"))
        root.chmod(0o755)
        cluster = SlurmCluster(root / "slurm")
        try:
            cluster.start()
            up.append(cluster.started_in_s or 0.0)
            env = {**os.environ, **cluster.env}
            os.environ.update(cluster.env)
            for times in (first, later):
                t = time.monotonic()
                job = cluster.sbatch("#!/bin/sh\nsrun -N2 -n2 sleep 300\n", "-N2", cwd=root)
                cluster.wait_running(job)
                times.append(time.monotonic() - t)
            started, each = asyncio.run(_through_agent(job, args.runs))
            agent.append(started)
            mux.extend(each)
            srun.extend(_srun_each(job, args.runs, env))
            cluster.cancel_all()
            sim = sim_job(cluster, root / "sim")
            common = ["--port", str(sim.port), "--remote-python", PY, "--sim-gpus", sim.sim_gpus()]
            waits.append(_tui("wait", f"slurm:{sim.job}", *common, "--log", NODE_LOG, "--timeout", "120"))
            stops.append(_tui("stop", f"slurm:{sim.job}", *common))
        finally:
            t = time.monotonic()
            cluster.stop()
            down.append(time.monotonic() - t)
    rows = [
        ("cluster up (munged, slurmctld, 2 slurmd; `sinfo` idle)", _s(up)),
        ("cluster down (jobs cancelled, daemons by pid file)", _s(down)),
        ("first job, sbatch to RUNNING", _s(first)),
        ("a later job, sbatch to RUNNING", _s(later)),
        ("a node's agent up (`srun --overlap` step, hello)", _ms(agent)),
        ("a command through the node's agent", _ms(mux)),
        ("a command as its own `srun --overlap` step", _ms(srun)),
        ("`wait slurm:J` to ready (sim TP16, 2 nodes, speed 100, 8 shards)", _s(waits)),
        ("`stop slurm:J` (TERM, GPUs confirmed, scancel, gone from squeue)", _s(stops)),
    ]
    print(section(
        "Slurm: the test cluster, and a command inside a job",
        md_table(("what", "median"), rows),
        [f"{args.trials} trials, {args.runs} commands each way per trial; one machine, both nodes on it",
         "the `wait` figure includes the simulated startup itself (about 5 s at --speed 100)"],
        f".venv/bin/python bench/bench_slurm.py --trials {args.trials} --runs {args.runs}",
    ))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
