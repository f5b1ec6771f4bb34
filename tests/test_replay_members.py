"""`replay A.log B.log …`: one member per log (node0 first), one deployment verdict; one log is unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.processes import Cli

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "fixtures" / "logs"
NODE1 = LOGS / "multinode-node1-tp16.log"


@pytest.fixture
def replay(cli: Cli) -> Callable[..., tuple[int, dict[str, object], str]]:
    def run(*paths: Path) -> tuple[int, dict[str, object], str]:
        proc = cli("replay", *paths, "--json", timeout=60)
        return proc.returncode, json.loads(proc.stdout) if proc.stdout else {}, proc.stderr

    return run


def test_one_log_has_no_members_key(replay) -> None:
    code, out, _ = replay(NODE1)
    assert code == 0 and "members" not in out and out["phase"] == "cuda_graph"


def test_two_logs_are_two_members_and_the_verdict_is_over_both(replay) -> None:
    code, out, _ = replay(LOGS / "v0.5.23-tp8-eagle3-ready.log", NODE1)
    assert code == 0
    members = out["members"]
    assert isinstance(members, list) and [m["name"] for m in members] == ["node0", "node1"]
    assert members[1]["role"] == "node" and members[1]["host"] == str(NODE1)
    assert members[1]["phase"] == "ready"  # node 0 serves only once every node is up
    assert out["phase"] == "ready" and out["tp_size"] == 16


def test_a_failed_node_fails_the_deployment_and_the_reason_names_it(replay) -> None:
    code, out, _ = replay(NODE1, LOGS / "fail-oom-load-0.5.9.log")
    assert code == 0 and out["phase"] == "failed"
    members = out["members"]
    assert isinstance(members, list) and members[1]["error"]["kind"] == "oom"
    assert members[1]["reason"].startswith("failed in loading weights (out of memory): ")


def test_a_bad_second_file_is_one_line(cli: Cli) -> None:
    proc = cli("replay", NODE1, "/nonexistent/n1.log", timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no such file" in proc.stderr
