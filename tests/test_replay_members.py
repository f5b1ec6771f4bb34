"""`replay A.log B.log …`: one member per log (node0 first), one deployment verdict; one log is unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "fixtures" / "logs"
NODE1 = LOGS / "multinode-node1-tp16.log"


def _replay(*paths: Path) -> tuple[int, dict[str, object], str]:
    proc = subprocess.run([sys.executable, "-m", "tui", "replay", *map(str, paths), "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    return proc.returncode, json.loads(proc.stdout) if proc.stdout else {}, proc.stderr


def test_one_log_has_no_members_key() -> None:
    code, out, _ = _replay(NODE1)
    assert code == 0 and "members" not in out and out["phase"] == "cuda_graph"


def test_two_logs_are_two_members_and_the_verdict_is_over_both() -> None:
    code, out, _ = _replay(LOGS / "v0.5.23-tp8-eagle3-ready.log", NODE1)
    assert code == 0
    members = out["members"]
    assert isinstance(members, list) and [m["name"] for m in members] == ["node0", "node1"]
    assert members[1]["role"] == "node" and members[1]["host"] == str(NODE1)
    assert members[1]["phase"] == "ready"  # node 0 serves only once every node is up
    assert out["phase"] == "ready" and out["tp_size"] == 16


def test_a_failed_node_fails_the_deployment_and_the_reason_names_it() -> None:
    code, out, _ = _replay(NODE1, LOGS / "fail-oom-load-0.5.9.log")
    assert code == 0 and out["phase"] == "failed"
    members = out["members"]
    assert isinstance(members, list) and members[1]["error"]["kind"] == "oom"
    assert members[1]["reason"].startswith("failed (oom)")


def test_a_bad_second_file_is_one_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "tui", "replay", str(NODE1), "/nonexistent/n1.log"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no such file" in proc.stderr
