"""Formatting (tui.core.fmt) and the view-neutral reports (tui.core.report) of a readiness state."""

from __future__ import annotations

import json

import pytest

from tests.test_readiness_phases import at, feed, startup
from tui.core import fmt
from tui.core.events import BatchStats, Failure, Milestone
from tui.core.report import JSON_KEYS, format_report, format_timeline, to_json
from tui.core.state import Readiness
from tui.core.wording import verdict_line


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.4, "0.4s"),
        (9.94, "9.9s"),
        (9.96, "10s"),
        (42.0, "42s"),
        (133.0, "2m13s"),
        (3600.0, "1h00m"),
        (3725.0, "1h02m"),
        (None, "-"),
    ],
)
def test_duration(seconds: float | None, text: str) -> None:
    assert fmt.duration(seconds) == text


def test_sizes_rates_and_eta() -> None:
    assert fmt.gib(20.14) == "20.1 GiB" and fmt.gib(None) == "-"
    assert fmt.gib_bytes(21 * (1 << 30) + (1 << 29)) == "21.5 GiB" and fmt.gib_bytes(None) == "-"
    assert fmt.rate(7.14) == "7.1 shards/s" and fmt.rate(12.6, "batches") == "13 batches/s"
    assert fmt.rate(0.05) == "0.05 shards/s" and fmt.rate(None) == "-" and fmt.rate(0.0) == "-"
    assert fmt.eta(0.9) == "ETA 1 s" and fmt.eta(42.2) == "ETA 43 s" and fmt.eta(133.0) == "ETA 2m13s"
    assert fmt.eta(None) == "ETA ?"
    assert fmt.ago(0.4) == "0.4 s ago" and fmt.ago(133.0) == "2m13s ago"
    assert fmt.clock_of("2025-03-08 12:29:04") == "12:29:04" and fmt.clock_of(None) == ""


def test_to_json_has_exactly_the_design_keys() -> None:
    s = feed(startup() + [BatchStats("decode", gen_throughput=52.3, accept_len=1.52, running_req=2, **at(40))])
    obj = to_json(s)
    assert tuple(obj) == JSON_KEYS == (
        "phase", "shards", "tp_size", "speculative", "error", "decode", "timeline", "ranks", "reason", "eta", "stall",
    )  # fmt: skip
    assert obj["reason"] == verdict_line(s) and obj["reason"].startswith("serving")
    assert obj["eta"] == {"ready_in_s": None, "phase_left_s": None, "basis": None, "launches": 0}
    # serving is never stalled (no budget, no quiet time); the last progress is the decode line, as the log prints it
    assert obj["stall"] == {"quiet_s": None, "budget_s": None, "last_progress_at": "2025-11-29 10:00:40"}
    assert obj["phase"] == "serving" and obj["shards"] == {"done": 4, "total": 4}
    assert obj["tp_size"] == 2 and obj["speculative"] == "EAGLE3" and obj["error"] is None
    assert obj["decode"] == {"accept_len": 1.52, "gen_throughput": 52.3}
    timeline = obj["timeline"]
    assert isinstance(timeline, list) and timeline[1] == {
        "phase": "init",
        "start": "2025-11-29 10:00:02",
        "end": "2025-11-29 10:00:04",
        "model": "main",
        "duration_s": 2.0,
    }
    assert timeline[-1]["end"] is None and timeline[-1]["duration_s"] is None
    ranks = obj["ranks"]
    assert isinstance(ranks, dict) and ranks["TP0"]["avail_mem_gb"] == 120.0 and ranks["TP0"]["mem_usage_gb"] == 16.5
    json.dumps(obj)  # serialisable as is


def test_to_json_of_an_empty_state() -> None:
    assert to_json(Readiness()) == {
        "phase": "starting",
        "shards": None,
        "tp_size": None,
        "speculative": None,
        "error": None,
        "decode": None,
        "timeline": [],
        "ranks": {},
        "reason": "waiting for the first log line",
        "eta": {"ready_in_s": None, "phase_left_s": None, "basis": None, "launches": 0},
        # nothing seen: no quiet time, no log time; starting's budget stands
        "stall": {"quiet_s": None, "budget_s": 600.0, "last_progress_at": None},
    }


def test_to_json_error_keeps_kind_and_line() -> None:
    line = "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB."
    obj = to_json(feed([Failure("oom", line + "\n", **at(3))]))
    error = obj["error"]
    assert obj["phase"] == "failed" and isinstance(error, dict)
    assert (error["kind"], error["line"]) == ("oom", line)
    assert error["remedy"]["source"] == "table"  # what it says: tests/test_remedy.py


def test_format_timeline_is_a_table_with_durations() -> None:
    s = feed(
        startup("graph_end")
        + [
            Milestone("load_begin", rank="TP0", draft=True, **at(20)),
            Milestone("load_end", rank="TP0", draft=True, **at(23)),
        ]
    )
    lines = format_timeline(s).splitlines()
    assert lines[0].split() == ["PHASE", "MODEL", "START", "END", "DURATION"]
    assert lines[2].split() == ["init", "main", "2025-11-29", "10:00:02", "2025-11-29", "10:00:04", "2.0s"]
    assert lines[-1].split() == ["loading_weights", "draft", "2025-11-29", "10:00:20", "2025-11-29", "10:00:23", "3.0s"]
    assert any(line.split()[:2] == ["cuda_graph", "main"] and line.endswith("11s+") for line in lines)
    assert format_timeline(Readiness()) == "timeline: (no phase seen)"


def test_format_report_gives_the_cause_of_a_failure_with_its_line() -> None:
    line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB."
    s = feed(
        startup("load_begin")
        + [
            Failure("exception", "Scheduler hit an exception:", root_cause=False, **at(7)),
            Failure("oom", line, rank="TP5", **at(7)),
        ]
    )
    text = format_report(s)
    assert "state: failed" in text and "cause: oom (root cause)" in text and f"line:  {line}" in text
    assert "tp 2" in text and "speculative EAGLE3" in text
