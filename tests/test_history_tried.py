"""The history keeps the remedy a relaunch ran with (the TUI's "restart with this change": `tried` per launch), and
`history --compare` says whether it helped. The states are real replays of logs; the store a real SQLite file."""

from __future__ import annotations

import io
from pathlib import Path

from tests.helpers.sim import ROOT
from tests.test_ui_remedy import FAILED_CAPTURE
from tui.commands.history import format_compare, format_launches, helped
from tui.commands.replay import replay_stream
from tui.core.remedy import remedy, tried_change
from tui.core.state import Phase
from tui.history.record import to_record
from tui.history.store import HistoryStore

READY_LOG = ROOT / "tests" / "fixtures" / "logs" / "v0.5.23-tp8-eagle3-ready.log"
LAUNCH = "python -m sglang.launch_server --model-path /models/llama-70b --tp 8"


def test_the_relaunch_records_the_change_and_compare_says_it_helped(tmp_path: Path) -> None:
    failed = replay_stream(io.BytesIO(FAILED_CAPTURE.encode())).evolve(launch_command=LAUNCH)
    found = remedy(failed)
    assert failed.phase is Phase.FAILED and found is not None and found.changes
    tried = tried_change(failed, found)
    relaunch = replay_stream(READY_LOG.open("rb")).evolve(launch_command=found.command, tried_change=tried)
    assert relaunch.phase in (Phase.READY, Phase.SERVING)
    with HistoryStore(tmp_path / "h.sqlite3") as store:
        first = store.record_launch(to_record(failed, "gpu-a", "tui", port=30000, log="/l"))  # type: ignore[arg-type]
        # the failed launch recorded again once the restart was asked for (its stop lands): never its own remedy
        again = store.record_launch(
            to_record(failed.evolve(tried_change=tried), "gpu-a", "tui", port=30000, log="/l")  # type: ignore[arg-type]
        )
        second = store.record_launch(to_record(relaunch, "gpu-a", "tui", port=30000, log="/l"))  # type: ignore[arg-type]
        a, b = store.launch(first), store.launch(second)
    assert again == first and a is not None and b is not None
    assert a["tried"] is None and a["outcome"] == "failed"
    assert b["tried"] == {
        "changes": [{"flag": c.flag, "value": c.value, "was": c.was} for c in found.changes],
        "cause": "oom",
        "after": a["start"],
    }
    assert helped(a, b) == "yes" and helped(b, a) is None
    text = format_compare(a, b)
    assert f"outcome  #{first} failed (oom), #{second} ready" in text and "helped: yes" in text
    assert f"#{second} ran with --cuda-graph-max-bs-decode 80 (was 160)" in text and "the remedy for oom" in text
    assert f"#{second} ran with --cuda-graph-max-bs-decode 80 (was 160)" in format_launches([b, a])


def test_a_relaunch_that_failed_the_same_way_did_not_help(tmp_path: Path) -> None:
    failed = replay_stream(io.BytesIO(FAILED_CAPTURE.encode())).evolve(launch_command=LAUNCH)
    found = remedy(failed)
    assert found is not None
    later = FAILED_CAPTURE.replace("10:00:", "10:05:")  # the same failure, a later launch (its own start mark)
    again = replay_stream(io.BytesIO(later.encode())).evolve(tried_change=tried_change(failed, found))
    with HistoryStore(tmp_path / "h.sqlite3") as store:
        a = store.launch(store.record_launch(to_record(failed, "gpu-a", "tui")))  # type: ignore[arg-type]
        b = store.launch(store.record_launch(to_record(again, "gpu-a", "tui")))  # type: ignore[arg-type]
    assert a is not None and b is not None and helped(a, b) == "no"
