"""`sglang-tui history`, `replay --record` and `--no-history`, as a user runs them (subprocesses, real files)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.processes import Cli
from tests.helpers.sim import ROOT

LOG = ROOT / "tests" / "fixtures" / "logs" / "v0.5.23-tp8-eagle3-ready.log"


@pytest.fixture
def tui(cli: Cli) -> Callable[..., subprocess.CompletedProcess[str]]:
    return lambda *args, env=None: cli(*args, timeout=60, env=env)


def test_replay_record_then_history_and_compare(tmp_path: Path, tui) -> None:
    db = tmp_path / "h.sqlite3"
    first = tui("replay", str(LOG), "--record", "gpu-a", "--history", str(db))
    assert first.returncode == 0 and "recorded launch 1 (ready)" in first.stderr
    again = tui("replay", str(LOG), "--record", "gpu-a", "--history", str(db), "--json")
    assert "recorded launch 1 (ready)" in again.stderr  # the same launch: one row, not two
    obj = json.loads(again.stdout)
    assert obj["eta"]["ready_in_s"] is None and obj["reason"].startswith("serving")
    assert tui("replay", str(LOG), "--record", "gpu-b", "--history", str(db)).returncode == 0
    listing = tui("history", "--history", str(db))
    assert listing.returncode == 0
    lines = listing.stdout.splitlines()
    assert lines[0].split()[:5] == ["ID", "HOST", "START", "OUTCOME", "TOTAL"]
    assert "1m14s" in lines[1] and "gpu-b" in lines[1] and "gpu-a" in lines[2]
    assert "key: gpu-a: meta-llama/Llama-3.3-70B-Instruct · tp8 · spec EAGLE3" in listing.stdout
    one_host = json.loads(tui("history", "gpu-a", "--json", "--history", str(db)).stdout)
    assert [r["host"] for r in one_host["launches"]] == ["gpu-a"]
    launch = one_host["launches"][0]
    assert launch["outcome"] == "ready" and launch["shards"] == 30 and launch["startup_timings"]["load_weight"] == 71.95
    assert {p["phase"] for p in launch["phases"]} >= {"init", "loading_weights", "kv_cache", "cuda_graph", "warmup"}
    compare = tui("history", "--compare", "1", "2", "--history", str(db))
    assert compare.returncode == 0 and "loading_weights  1m14s  1m14s  1.00×" in compare.stdout
    assert "keys differ" in compare.stdout  # another host: another key
    data = json.loads(tui("history", "--compare", "1", "2", "--json", "--history", str(db)).stdout)["compare"]
    assert data["same_key"] is False and data["phases"][2] == {"phase": "loading_weights", "a_s": 74.0, "b_s": 74.0,
                                                               "ratio": 1.0}  # fmt: skip


def test_bad_input_is_one_line(tmp_path: Path, tui) -> None:
    db = tmp_path / "h.sqlite3"
    missing = tui("history", "--history", str(db))
    assert missing.returncode == 6 and "no history yet" in missing.stderr and "Traceback" not in missing.stderr
    tui("replay", str(LOG), "--record", "--history", str(db))
    unknown = tui("history", "--compare", "1", "9", "--history", str(db))
    assert unknown.returncode == 6 and "no launch 9" in unknown.stderr
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"not sqlite" * 500)
    bad = tui("history", "--history", str(junk))
    assert bad.returncode == 2 and "--no-history" in bad.stderr and "Traceback" not in bad.stderr
    both = tui("replay", str(LOG), "--record", "--no-history")
    assert both.returncode == 2 and "contradict" in both.stderr
    limit = tui("history", "--limit", "-1", "--history", str(db))  # QA pass: it showed one launch
    assert limit.returncode == 2
    assert limit.stderr == "sglang-tui history: --limit: -1: use 1 or more (try sglang-tui history --help)\n"
    other = tui("history", "nosuchhost", "--history", str(db))  # QA pass: "no launches recorded" (there is one)
    assert other.returncode == 6 and other.stdout == "history: no launches recorded for nosuchhost\n"


def test_env_and_xdg_default(tmp_path: Path, tui) -> None:
    env: dict[str, str | None] = {"SGLANG_TUI_HISTORY": None, "XDG_STATE_HOME": str(tmp_path / "state")}
    assert tui("replay", str(LOG), "--record", env=env).returncode == 0
    assert (tmp_path / "state" / "sglang-tui" / "history.sqlite3").exists()
    env["SGLANG_TUI_HISTORY"] = str(tmp_path / "env.sqlite3")
    assert tui("replay", str(LOG), "--record", env=env).returncode == 0
    assert (tmp_path / "env.sqlite3").exists()


def test_wait_no_history_writes_nothing(tmp_path: Path, tui) -> None:
    from tests.helpers.sshd import free_port

    db = tmp_path / "h.sqlite3"
    args = ("wait", "local", "--log", str(tmp_path / "none.log"), "--port", str(free_port()), "--timeout", "1.5")
    off = tui(*args, "--no-history", "--history", str(db))
    assert off.returncode == 7 and not db.exists()
    on = tui(*args, "--history", str(db))
    assert on.returncode == 7 and db.exists()  # opened (no launch seen: nothing recorded)
