"""The multi-node simulator: one process per node, global rank labels, node 0 serves HTTP only once every
node has loaded and captured, and waits for a missing node in NCCL init; SIGTERM on node 0 stops them all."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.helpers.processes import Sims
from tests.helpers.sim import SimServer
from tests.helpers.sshd import free_port


def _until(check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def _health(port: int) -> int | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return int(r.status)
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return None


def _text(sim: SimServer) -> str:
    return sim.log.read_text(errors="replace")


def test_two_nodes_reach_ready_with_global_ranks(tmp_path: Path, sim: Sims) -> None:
    nodes = sim.nodes(tmp_path, shards=8, speculative="none")
    _until(lambda: _health(nodes[0].port) == 200 and "fired up" in _text(nodes[0]))
    n0, n1 = _text(nodes[0]), _text(nodes[1])
    assert "[" in n1 and " TP8]" in n1 and " TP15]" in n1 and " TP0]" not in n1
    assert " TP7]" in n0 and " TP8]" not in n0
    assert "Completed |" not in n1 and "fired up" not in n1 and "Uvicorn" not in n1  # node 1 prints little
    assert "'nnodes': 2" in n1 and "'node_rank': 1" in n1
    gpus = sorted(p.name for p in (nodes[1].gpu_state).glob("proc-*.json"))
    assert len(gpus) == 8  # its own simulated GPUs


def test_node0_waits_in_nccl_init_for_a_missing_node(tmp_path: Path, sim: Sims) -> None:
    addr = f"127.0.0.1:{free_port()}"
    port = free_port()
    args = ["--nnodes", "2", "--dist-init-addr", addr]
    (tmp_path / "n0").mkdir()
    (tmp_path / "n1").mkdir()
    n0 = sim(tmp_path / "n0", tp=16, port=port, shards=8, speculative="none", extra=[*args, "--node-rank", "0"])
    n1: SimServer | None = None
    try:
        _until(lambda: _text(n0).count("Init parallel begin") == 8)
        time.sleep(1.0)  # 200 simulated seconds: alone, loading would have begun long ago
        assert "Load weight begin" not in _text(n0) and _health(port) is None
        n1 = sim(tmp_path / "n1", tp=16, port=port, shards=8, speculative="none", extra=[*args, "--node-rank", "1"])
        _until(lambda: _health(port) == 200)
    finally:
        for node in (n0, n1):
            if node is not None:
                node.stop()


def test_hang_on_node1_holds_node0_after_loading(tmp_path: Path, sim: Sims) -> None:
    nodes = sim.nodes(tmp_path, shards=8, speculative="none", faults={1: "hang-weights"})
    _until(lambda: "100% Completed | 8/8" in _text(nodes[0]))
    time.sleep(1.0)
    assert "Load weight end" not in _text(nodes[0])  # the post-load collective waits for node 1
    assert _health(nodes[0].port) is None and nodes[0].alive() and nodes[1].alive()


def test_sigterm_on_node0_stops_every_node(tmp_path: Path, sim: Sims) -> None:
    nodes = sim.nodes(tmp_path, shards=8, speculative="none")
    _until(lambda: _health(nodes[0].port) == 200)
    assert nodes[0].proc is not None
    nodes[1].proc.send_signal(15)
    _until(lambda: "waiting for the rank-0 ShutdownReq" in _text(nodes[1]))
    assert nodes[1].alive()  # a non-zero node does not stop on its own
    nodes[0].proc.send_signal(15)
    assert nodes[0].wait(30) == 0
    assert nodes[1].wait(30) == 0  # the ShutdownReq broadcast stopped it
