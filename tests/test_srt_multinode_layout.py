"""A PD worker that spans several nodes in an srtctl job's log directory (srt-slurm c88ef73: one srun and one
`{node}_{mode}_w{index}.out` per node of the worker, `--nnodes`/`--node-rank` on each, `--port 0` off node 0;
docs/srtctl-layout.md), the pure parts: the recipe's nodes per worker, a log's node rank, the logs grouped per
worker in node-rank order (read from a fixture directory as the job watch reads one), the members made of them,
and the deployment model that counts the worker once and names the worker and the node that holds it back."""

from __future__ import annotations

import os
from pathlib import Path

from tui.commands.srt_members import specs_of
from tui.core import deployment as dm
from tui.core import srtlayout as srt
from tui.core.config import WatchConfig
from tui.core.state import ErrorInfo, Phase, Readiness, StallInfo
from tui.core.wording import deployment_line

# srt-slurm's src/srtctl/core/schema.py ResourceConfig: 1 prefill worker over 2 nodes of 8 GPUs (TP16), 2 decode
RECIPE = """\
resources:
  gpu_type: "h100"
  gpus_per_node: 8
  prefill_nodes: 2
  prefill_workers: 1
  decode_nodes: 1
  decode_workers: 2
"""


def _args(node_rank: int, nnodes: int, port: int) -> str:
    """A worker log's head as SGLang 0.5.x prints it (`server_args=ServerArgs(…)`, one line)."""
    return (f"[2026-12-06 10:00:00] server_args=ServerArgs(model_path='m', host='0.0.0.0', port={port}, "
            f"nccl_port=None, tp_size=16, nnodes={nnodes}, node_rank={node_rank}, "
            "disaggregation_bootstrap_port=7200)\n")  # fmt: skip


def _fixture(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """A log directory as srtctl leaves one (node names out of alphabetical order: the job's own order rules),
    read as the job watch reads it: its file names, each worker log's lines that name a port."""
    files = {
        "gpu-b_prefill_w0.out": _args(0, 2, 6100),  # node 0 of prefill0
        "gpu-a_prefill_w0.out": _args(1, 2, 0),  # node 1 (srtctl: `--port 0`)
        "gpu-c_decode_w0.out": _args(0, 1, 6100),
        "gpu-c_decode_w1.out": "",  # started, no line yet
        "gpu-c_config.json": "{}",
        "sweep_4242.log": "Model is not ready, waiting for 1 prefills\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    names = sorted(os.listdir(tmp_path))
    heads = {
        n: "".join(line for line in (tmp_path / n).read_text().splitlines(keepends=True) if "port" in line)
        for n in names
        if srt.WORKER_LOG.match(n)
    }
    return names, heads


def test_the_recipe_says_how_many_nodes_a_worker_spans() -> None:
    recipe = srt.parse_recipe(RECIPE)
    assert (recipe.nodes_per_worker("prefill"), recipe.nodes_per_worker("decode")) == (2, 1)
    # an explicit gpus_per_prefill wins; srtctl's gpus_per_node default (4) when the recipe says none
    assert srt.parse_recipe(RECIPE + "  gpus_per_prefill: 24\n").nodes_per_worker("prefill") == 3
    assert srt.parse_recipe("resources:\n  prefill_nodes: 4\n  prefill_workers: 2\n").nodes_per_worker("prefill") == 2
    assert srt.Recipe().nodes_per_worker("decode") == 1
    # decode workers on `decode_nodes: 0` share the prefill nodes and take the prefill workers' size (TP16: 2 nodes)
    shared = "resources:\n  gpus_per_node: 8\n  prefill_nodes: 2\n  prefill_workers: 1\n  decode_nodes: 0\n  decode_workers: 1\n"
    assert srt.parse_recipe(shared).nodes_per_worker("decode") == 2


def test_a_logs_node_rank_is_the_one_its_server_args_name() -> None:
    assert srt.log_node_rank(_args(1, 2, 0)) == 1
    assert srt.log_node_rank("server_args={'nnodes': 2, 'node_rank': 1, 'port': 0}") == 1
    assert srt.log_node_rank("[x] Load weight begin") is None
    assert srt.log_port(_args(1, 2, 0)) is None  # `--port 0`: no port of its own


def test_the_logs_are_grouped_per_worker_in_node_rank_order(tmp_path: Path) -> None:
    names, heads = _fixture(tmp_path)
    found = srt.workers(names)
    ranks = {w.log: srt.log_node_rank(heads.get(w.log, "")) for w in found}
    ends = srt.endpoints(found, ranks)
    assert [(e.name, [w.node for w in e.logs]) for e in ends] == [
        ("prefill0", ["gpu-b", "gpu-a"]),  # its log says gpu-b is node 0, whatever the names' order
        ("decode0", ["gpu-c"]),
        ("decode1", ["gpu-c"]),
    ]
    # before the logs say: the job's node order (srtctl numbers a worker's nodes in it), else the names'
    assert [w.node for w in srt.endpoints(found, {}, ["gpu-b", "gpu-a", "gpu-c"])[0].logs] == ["gpu-b", "gpu-a"]
    assert [w.node for w in srt.endpoints(found, {})[0].logs] == ["gpu-a", "gpu-b"]
    recipe = srt.parse_recipe(RECIPE)
    assert srt.missing_nodes(ends, recipe) == []
    assert srt.missing_nodes(srt.endpoints(found[1:], {}), recipe) == ["prefill0 1 of 2 nodes"]
    assert srt.worker_counts(found) == recipe.counts() == "1P 2D"  # the worker counted once


def test_the_members_are_the_workers_node_0_as_the_worker_and_its_other_nodes(tmp_path: Path) -> None:
    names, heads = _fixture(tmp_path)
    specs = specs_of("/o/4242/logs", srt.workers(names), heads, WatchConfig(port=30000), ["gpu-a", "gpu-b", "gpu-c"])
    assert [(s.name, s.role, s.host, s.port, s.node_rank, s.worker) for s in specs] == [
        ("prefill0", "prefill", "gpu-b", 6100, 0, "prefill0"),
        ("prefill0.node1", "prefill", "gpu-a", 6100, 1, "prefill0"),
        ("decode0", "decode", "gpu-c", 6100, None, None),
        ("decode1", "decode", "gpu-c", 6132, None, None),  # no line yet: srtctl's next port on its node
    ]
    leader, node1 = specs[0], specs[1]
    assert leader.health and leader.bootstrap_port == 7200 and leader.process_port == 6100
    # node 1 serves no /health and has no port of its own: its processes are found by its log, on its node
    assert not node1.health and node1.bootstrap_port is None and node1.process_port is None
    assert node1.log == "/o/4242/logs/gpu-a_prefill_w0.out"


def _dep(node0: Readiness, node1: Readiness, decode: Readiness) -> dm.Deployment:
    return dm.Deployment((
        dm.Member("prefill0", "prefill", "gpu-b", node0, node_rank=0, worker="prefill0"),
        dm.Member("prefill0.node1", "prefill", "gpu-a", node1, node_rank=1, worker="prefill0"),
        dm.Member("decode0", "decode", "gpu-c", decode),
    ))  # fmt: skip


def _up(phase: Phase) -> Readiness:
    return Readiness.of(phase=phase, log_ready=phase is Phase.READY, health_ready=phase is Phase.READY)


def test_the_worker_counts_once_and_is_ready_only_when_its_node_0_serves() -> None:
    ready = _dep(_up(Phase.READY), _up(Phase.CUDA_GRAPH), _up(Phase.READY))
    assert dm.deployment_phase(ready) is Phase.READY
    assert dm.role_counts(ready) == (("prefill", 1, 1), ("decode", 1, 1))  # the board's 1/1P 1/1D
    assert deployment_line(ready) == "ready: 1P 1D"
    # node 1 through its capture, node 0 still warming up: node 1 is no further than node 0, the worker not ready
    warming = _dep(_up(Phase.WARMUP), _up(Phase.READY), _up(Phase.READY))
    assert dm.member_phase(warming, warming.member("prefill0.node1")) is Phase.WARMUP
    assert dm.role_counts(warming) == (("prefill", 0, 1), ("decode", 1, 1))
    assert dm.deployment_phase(warming) is Phase.WARMUP


def test_a_failure_or_stall_on_the_workers_node_1_names_the_worker_and_the_node() -> None:
    oom = ErrorInfo("oom", "torch.OutOfMemoryError: CUDA out of memory.")
    failed = _dep(_up(Phase.LOADING_WEIGHTS), Readiness.of(phase=Phase.FAILED, error=oom), _up(Phase.READY))
    line = deployment_line(failed)
    assert dm.combined(failed).failed_member == "prefill0.node1"
    assert line.startswith("prefill0 (node 1 of 2, on gpu-a) failed (out of memory): "), line
    stall = StallInfo(since=0.0, limit_s=60.0, detail="no progress for 90 s")
    # both nodes in their capture, node 1 stalled: it holds the worker back, named with its node
    stalled = _dep(_up(Phase.CUDA_GRAPH), Readiness.of(phase=Phase.CUDA_GRAPH, stall=stall), _up(Phase.READY))
    whole = dm.combined(stalled)
    assert whole.stall is not None and whole.stall.detail.startswith("prefill0.node1: "), whole.stall
    line = deployment_line(stalled)
    assert line.startswith("stalled in CUDA graph capture: "), line
    assert "prefill0 (node 1 of 2, on gpu-a) stalled capturing CUDA graphs (no progress for 90 s)" in line, line


def test_the_members_pane_lists_each_node_of_the_worker_in_one_column() -> None:
    from tui.ui.deployment_app import member_rows

    rows = member_rows(_dep(_up(Phase.READY), _up(Phase.CUDA_GRAPH), _up(Phase.READY))).plain.splitlines()
    named = [row for row in rows if row and not row.startswith(" ")]  # a member's first line (then its timeline)
    assert [row.split()[:3] for row in named] == [["prefill0", "prefill", "gpu-b"],
                                                  ["prefill0.node1", "prefill", "gpu-a"],
                                                  ["decode0", "decode", "gpu-c"]]  # fmt: skip
    assert named[0].index(" prefill ") == named[1].index(" prefill "), rows  # one column, whatever the name
