"""The whole deployment over real SSH: two "nodes" as two loopback sshd instances behind two ssh-config
aliases, each running one node of a simulated 2x8 launch (its own log and simulated GPUs)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.pids import alive
from tests.helpers.processes import Sims
from tests.helpers.sim import SimServer, wait_for_log
from tests.helpers.sshd import Sshd, sshd_available
from tests.test_stop import TREE, server_pids

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(not sshd_available(), reason="OpenSSH sshd is not installed")


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Two sshd instances and an ssh config with the aliases node0 and node1; yields the config's path."""
    root = tmp_path_factory.mktemp("nodes")
    servers = [Sshd(root / f"sshd{i}").start() for i in range(2)]
    config = root / "ssh_config"
    config.write_text("".join(
        f"Host node{i}\n  HostName {s.host}\n  Port {s.port}\n  User {s.user}\n  IdentityFile {s.identity}\n"
        f"  UserKnownHostsFile {s.known_hosts}\n"
        for i, s in enumerate(servers)
    ))  # fmt: skip
    yield config
    for server in servers:
        server.stop()


def _targets(nodes: list[SimServer]) -> list[str]:
    return [f"node{i}:{node.log}" for i, node in enumerate(nodes)]


def _common(config: Path, nodes: list[SimServer]) -> list[str]:
    return ["--ssh-config", str(config), "--port", str(nodes[0].port), "--remote-python", sys.executable,
            "--sim-gpus", ",".join(str(n.gpu_state) for n in nodes)]  # fmt: skip


def _tui(*args: str, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tui", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def test_clean_2x8_launch_is_ready_with_tp16_and_stop_frees_both_nodes(
    two_nodes: Path, tmp_path: Path, sim: Sims
) -> None:
    nodes = sim.nodes(tmp_path, shards=8, speed=100, speculative="none")
    bystanders = [subprocess.Popen([sys.executable, str(TREE), "bystander", "--gpu-state", str(n.gpu_state)],
                                   stdout=subprocess.DEVNULL, start_new_session=True) for n in nodes]  # fmt: skip
    try:
        out = _tui("wait", *_targets(nodes), *_common(two_nodes, nodes), "--timeout", "120", "--json")
        assert out.returncode == 0, out.stderr
        lines = [json.loads(line) for line in out.stdout.splitlines()]
        final = lines[-1]
        assert final["phase"] == "ready" and final["tp_size"] == 16
        assert [m["name"] for m in final["members"]] == ["node0", "node1"]
        assert [m["host"] for m in final["members"]] == ["node0", "node1"]
        assert {m["phase"] for m in final["members"]} <= {"ready", "serving"}  # node 0 serves its warmup request
        assert sorted(final["ranks"]) == sorted(f"TP{i}" for i in range(16))
        # each node says its own words in every object (which startup lines a loaded box lets it see varies)
        assert all(m["reason"] and m["phase"] for line in lines for m in line["members"])
        assert "ready: 2 nodes, tp 16" in out.stderr.splitlines()[-1]

        pids = [server_pids(n.gpu_state, b.pid) for n, b in zip(nodes, bystanders, strict=True)]
        assert all(len(p) == 8 for p in pids)
        stopped = _tui("stop", *_targets(nodes), *_common(two_nodes, nodes))
        assert stopped.returncode == 0, stopped.stderr + stopped.stdout
        assert stopped.stdout.count("GPU memory released") == 2, stopped.stdout
        assert "node0 (node0 port" in stopped.stdout and "node1 (node1 port" in stopped.stdout
        assert [p for ps in pids for p in ps if alive(p)] == []
        assert not nodes[0].alive() and not nodes[1].alive()
        assert all(alive(b.pid) for b in bystanders)  # the same-titled bystander on each node is untouched
        again = _tui("stop", *_targets(nodes), *_common(two_nodes, nodes))  # QA pass: this said "stopped …", exit 0
        assert again.returncode == 6 and again.stdout == "", again.stdout + again.stderr
        assert again.stderr.count("nothing stopped") == 2 and "no server found on node1 (node1 port" in again.stderr
    finally:
        for b in bystanders:
            b.kill()
            b.wait()


def test_hang_in_weights_on_node1_only_is_stalled_and_names_node1(two_nodes: Path, tmp_path: Path, sim: Sims) -> None:
    nodes = sim.nodes(tmp_path, shards=8, speed=100, speculative="none", faults={1: "hang-weights"})
    # attached once node1 loads (its hang comes at 40%): the quiet time counts from the log's own lines, so a 3 s
    # budget must not fall on node0's start, whose 8 rank processes take seconds to spawn on a busy machine
    wait_for_log(nodes[1], b"Load weight begin", 60)
    out = _tui("wait", *_targets(nodes), *_common(two_nodes, nodes), "--timeout", "120", "--json",
               "--stall-after", "3")  # fmt: skip
    assert out.returncode == 3, out.stderr
    last = out.stderr.splitlines()[-1]
    assert last.startswith("sglang-tui wait: stalled in loading weights: node1"), last
    final = json.loads(out.stdout.splitlines()[-1])
    assert final["members"][1]["reason"].startswith("stalled loading weights")
    assert "node1" in final["members"][0]["reason"] or final["members"][0]["phase"] == "loading_weights"
