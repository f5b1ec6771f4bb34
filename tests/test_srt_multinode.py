"""An srtctl job whose prefill worker spans two nodes, on the real 2-node cluster: srtctl starts one srun per node
of it, each writing its own `{node}_prefill_w0.out`, node 1 with `--nnodes 2 --node-rank 1 --port 0`
(srt-slurm c88ef73: src/srtctl/cli/mixins/worker_stage.py start_worker, src/srtctl/backends/sglang.py,
src/srtctl/core/topology.py; docs/srtctl-layout.md), simulated by `simulate --nnodes 2 --node-rank R`. The worker
is counted once (`ready: 1P 1D`), its ranks come from both nodes' logs, it is ready only once its node 0 serves,
and a failure on its node 1 names the worker and the node. (The cluster has two nodes: decode0 shares the first
with the prefill worker's node 0, where srtctl would give it a third.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.helpers.processes import Cli
from tests.helpers.slurm import NODES, SlurmCluster
from tests.test_slurm import job_processes
from tests.test_srt_job import board_until_ready, srt_job, wait_logged, wait_stalled

RECIPE = """\
name: "sim-pd-tp4x2"
resources:
  gpu_type: "h100"
  gpus_per_node: 8
  prefill_nodes: 2
  prefill_workers: 1
  decode_nodes: 1
  decode_workers: 1
"""
LAYOUT = (("prefill", 0, NODES[0], 0, 2), ("prefill", 0, NODES[1], 1, 2), ("decode", 0, NODES[0], 0, 1))


def test_a_two_node_prefill_worker_is_one_worker_ready_with_both_nodes_ranks(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    job = srt_job(cluster, tmp_path, layout=LAYOUT, recipe=RECIPE)
    target = f"srt:{job.log_dir}"
    out = cli("wait", target, *job.args(), "--timeout", "150", "--json", timeout=200)
    assert out.returncode == 0, out.stderr
    final = json.loads(out.stdout.splitlines()[-1])
    assert [(m["name"], m["role"], m["host"], m["phase"]) for m in final["members"]] == [
        ("prefill0", "prefill", NODES[0], "ready"),
        ("prefill0.node1", "prefill", NODES[1], "ready"),
        ("decode0", "decode", NODES[0], "ready"),
    ], final["members"]
    assert out.stderr.splitlines()[-1] == "sglang-tui wait: ready: 1P 1D", out.stderr  # the worker counted once
    # the worker's TP4: TP0-1 from node 0's log, TP2-3 from node 1's, named as the worker's
    assert {"prefill0 TP0", "prefill0 TP1", "prefill0 TP2", "prefill0 TP3"} <= set(final["ranks"]), final["ranks"]
    assert f"prefill0.node1 on {NODES[1]}, decode0 on {NODES[0]}:" in out.stderr, out.stderr  # node 1 serves no port
    # a board row: the job, the worker counted once in its PHASE cell, each node a member
    row = board_until_ready(cli, target)[-1]
    assert row["reason"] == "ready: 1P 1D", row
    assert [m["name"] for m in row["members"]] == ["prefill0", "prefill0.node1", "decode0"], row
    # the worker's node 1, dumped inside the job on its node: its own ranks, found with no port of its own
    dumped = cli("dump", target, "--member", "prefill0.node1", "--remote-python", sys.executable, "--json",
                 "--out", str(tmp_path / "node1.txt"), timeout=180)  # fmt: skip
    assert dumped.returncode == 0, dumped.stderr
    ranks = set(json.loads(dumped.stdout)["ranks"])
    assert {"TP2", "TP3"} <= ranks and not {"TP0", "TP1"} & ranks, dumped.stdout  # node 1's, not node 0's
    stopped = cli("stop", target, *job.args(), "--grace", "5", timeout=180)
    assert stopped.returncode == 0, stopped.stderr + stopped.stdout
    assert stopped.stdout.splitlines()[-1].startswith(f"cancelled slurm job {job.job}: "), stopped.stdout
    assert cluster.state(job.job) == "" and job_processes(job.job) == []


def test_a_failure_on_the_workers_second_node_names_the_worker_and_the_node(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    job = srt_job(cluster, tmp_path, {"prefill0.node1": "oom-load"}, layout=LAYOUT, recipe=RECIPE)
    out = cli("wait", f"srt:{job.log_dir}", *job.args(), "--timeout", "150", "--json", timeout=200)
    assert out.returncode == 1, out.stderr
    final = json.loads(out.stdout.splitlines()[-1])
    node1 = next(m for m in final["members"] if m["name"] == "prefill0.node1")
    assert node1["phase"] == "failed" and node1["error"]["kind"] in ("oom", "exception"), final["members"]
    assert out.stderr.splitlines()[-1].startswith(
        f"sglang-tui wait: prefill0 (node 1 of 2, on {NODES[1]}) failed in loading weights ("
    ), out.stderr


def test_a_stall_on_the_workers_second_node_names_the_worker_and_the_node(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    job = srt_job(cluster, tmp_path, {"prefill0.node1": "hang-capture"}, layout=LAYOUT, recipe=RECIPE)
    # watched once node 1 is in its capture: a short --stall-after applies to every phase, and a loaded machine can
    # take that long to start Python
    wait_logged([job.log_dir / f"{NODES[1]}_prefill_w0.out"], b"cuda graph begin")
    _, stderr = wait_stalled(cli, job, "prefill0.node1")
    assert f"prefill0 (node 1 of 2, on {NODES[1]}) stalled capturing CUDA graphs" in stderr[-1], stderr
