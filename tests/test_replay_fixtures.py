"""`replay --json` over the parser's constructed logs (tests/fixtures/logs): the final verdict of each format."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.processes import Cli

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "fixtures" / "logs"

# file -> (phase, shards, tp_size, speculative, error kind, decode gen_throughput), read off each log by hand
EXPECTED: dict[str, tuple[str, tuple[int, int] | None, int | None, str | None, str | None, float | None]] = {
    "v0.4.6-tp1-ready.log": ("serving", (4, 4), 1, None, None, 81.52),
    "v0.5.9-tp8-eagle3-ready.log": ("serving", (30, 30), 8, "EAGLE3", None, 598.31),
    "v0.5.14-tp8-ms-ready.log": ("serving", (8, 8), 8, None, None, 54.0),
    "v0.5.23-tp8-eagle3-ready.log": ("serving", (30, 30), 8, "EAGLE3", None, 512.7),
    "fail-oom-load-0.5.9.log": ("failed", (39, 191), 8, None, "oom", None),
    "fail-oom-capture-0.5.23.log": ("failed", None, 4, None, "oom", None),
    "fail-port-in-use.log": ("failed", None, 1, None, "port_in_use", None),
    "fail-nccl-timeout.log": ("failed", None, 2, None, "nccl", None),
    "fail-model-not-found.log": ("failed", None, None, None, "model_not_found", None),
    "relaunch-two-launches.log": ("loading_weights", (4, 4), 4, None, None, None),
    "old-time-only-midnight.log": ("cuda_graph", None, 2, None, None, None),
    "multinode-node1-tp16.log": ("cuda_graph", None, 16, None, None, None),
}


@pytest.fixture
def replay_json(cli: Cli) -> Callable[[Path], dict[str, object]]:
    def run(path: Path) -> dict[str, object]:
        proc = cli("replay", path, "--json", timeout=60)
        assert proc.returncode == 0, proc.stderr
        result: dict[str, object] = json.loads(proc.stdout)
        return result

    return run


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_verdict(name: str, replay_json) -> None:
    phase, shards, tp, spec, kind, gen = EXPECTED[name]
    obj = replay_json(LOGS / name)
    assert obj["phase"] == phase
    assert obj["shards"] == ({"done": shards[0], "total": shards[1]} if shards else None)
    assert obj["tp_size"] == tp and obj["speculative"] == spec
    error = obj["error"]
    assert (error["kind"] if isinstance(error, dict) else None) == kind
    decode = obj["decode"]
    assert (decode["gen_throughput"] if isinstance(decode, dict) else None) == gen


def test_eagle3_startup_timeline_has_draft_spans_inside_the_main_phases(replay_json) -> None:
    timeline = replay_json(LOGS / "v0.5.23-tp8-eagle3-ready.log")["timeline"]
    assert isinstance(timeline, list)
    main = [s for s in timeline if s["model"] == "main"]
    assert [s["phase"] for s in main] == [
        "starting",
        "init",
        "loading_weights",
        "kv_cache",
        "cuda_graph",
        "warmup",
        "ready",
        "serving",
    ]
    for draft in (s for s in timeline if s["model"] == "draft"):
        host = next(m for m in main if m["phase"] == draft["phase"])
        assert host["start"] <= draft["start"] and draft["end"] <= host["end"]  # same-format timestamps sort
        assert draft["duration_s"] is not None and draft["duration_s"] >= 0
    for span in main[:-1]:
        assert span["duration_s"] is not None


def test_relaunch_report_shows_the_last_launch_and_counts_them(cli: Cli) -> None:
    proc = cli("replay", LOGS / "relaunch-two-launches.log", timeout=60)
    assert proc.returncode == 0
    assert "state: loading_weights" in proc.stdout and "2 launches in this log" in proc.stdout
    assert "second/model" in proc.stdout and "first/model" not in proc.stdout
