"""The history store on a real SQLite file: schema and migrations, records read back as the core's `Past`,
bench results, a writer killed with SIGKILL mid-write, two writers at once, and bad files."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers.processes import Spawner
from tests.helpers.sim import ROOT
from tui.history.paths import default_path, history_path
from tui.history.store import SCHEMA_VERSION, HistoryError, HistoryStore, LaunchRecord

PHASES = (("starting", "main", None, None, 2.0), ("init", "main", None, None, 3.0),
          ("loading_weights", "main", None, None, 60.0), ("loading_weights", "draft", None, None, 2.0),
          ("cuda_graph", "main", None, None, 30.0), ("warmup", "main", None, None, 4.0))  # fmt: skip


def rec(mark: str, outcome: str = "ready", key: str = "k1", scale: float = 1.0) -> LaunchRecord:
    phases = tuple((p, m, s, e, d * scale) for p, m, s, e, d in PHASES)
    return LaunchRecord(
        key=key, key_fields={"host": "h", "model": "m", "tp": 8}, start_mark=mark, source="wait", outcome=outcome,
        started_at=float(len(mark)), total_s=99.0 * scale, shards=64, weight_gib_per_rank=16.5, phases=phases,
    )  # fmt: skip


WRITER = textwrap.dedent(
    """
    import sys
    from tui.history.store import HistoryStore, LaunchRecord
    store = HistoryStore(sys.argv[1])
    phases = tuple((f"p{i}", "main", None, None, float(i)) for i in range(200))
    i = 0
    print("ready", flush=True)
    while i < int(sys.argv[3]):
        store.record_launch(LaunchRecord(key="k", key_fields={"host": "h"}, start_mark=f"{sys.argv[2]}-{i}",
                                         source="wait", outcome="ready", total_s=1.0, phases=phases))
        i += 1
    """
)


def start_writer(path: Path, name: str, count: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), name, str(count)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def consistent(path: Path) -> int:
    """integrity_check ok and every launch has all of its phases: returns the number of launches."""
    db = sqlite3.connect(str(path))
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    counts = db.execute("SELECT l.id, COUNT(p.idx) FROM launches l LEFT JOIN phases p ON p.launch_id = l.id"
                        " GROUP BY l.id").fetchall()  # fmt: skip
    assert all(n == 200 for _, n in counts), counts[:5]
    return len(counts)


def test_schema_wal_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "h.sqlite3"
    with HistoryStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        first = store.record_launch(rec("log a"))
        store.record_launch(rec("log b", scale=1.1))
        store.record_launch(rec("log c", outcome="failed"))
        again = store.record_launch(rec("log a", scale=1.2))  # the same launch seen again: one row, updated
        assert again == first
        past = store.past("k1")
        assert past.count == 2 and {round(x, 3) for x in past.durations("loading_weights")} == {72.0, 66.0}
        assert past.median("cuda_graph") == pytest.approx(34.5) and past.weight_gib_per_rank() == 16.5
        assert store.past("k1", exclude_mark="log b").count == 1
        assert store.past("other").count == 0
        rows = store.launches("h")
        assert len(rows) == 3 and rows[0]["phases"][3] == {
            "phase": "loading_weights",
            "model": "draft",
            "start": None,
            "end": None,
            "duration_s": 2.0,
        }
    with HistoryStore(path) as store:  # reopened: no migration runs twice
        assert store.schema_version == SCHEMA_VERSION and len(store.launches()) == 3


def test_bench_results_by_launch(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite3") as store:
        a = store.record_launch(rec("log a"))
        b = store.record_launch(rec("log b"))
        assert store.last_bench("k1") is None
        store.record_bench(a, {"requests": {"ok": 16, "failed": 0}, "ttft_s": {"p50": 0.2}})
        store.record_bench(b, {"requests": {"ok": 8, "failed": 1}})
        assert store.last_bench("k1") == {"requests": {"ok": 8, "failed": 1}}
        assert store.last_bench("k2") is None


def test_newer_schema_and_garbage_are_one_line_errors(tmp_path: Path) -> None:
    newer = tmp_path / "newer.sqlite3"
    sqlite3.connect(str(newer)).execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    with pytest.raises(HistoryError, match="newer than this sglang-tui"):
        HistoryStore(newer)
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(HistoryError, match="--no-history"):
        HistoryStore(junk)


def test_paths(tmp_path: Path) -> None:
    assert default_path({"HOME": "/home/u"}) == Path("/home/u/.local/state/sglang-tui/history.sqlite3")
    assert default_path({"HOME": "/home/u", "XDG_STATE_HOME": "/x"}) == Path("/x/sglang-tui/history.sqlite3")
    assert default_path({"SGLANG_TUI_HISTORY": "/y/h.db", "XDG_STATE_HOME": "/x"}) == Path("/y/h.db")
    from tests.helpers.options import options_of
    from tui.commands.options import WaitOptions, WatchOptions

    assert history_path(off=True) is None and history_path(str(tmp_path / "a")) == tmp_path / "a"
    assert options_of(WaitOptions, "wait", "h", "--no-history").history is None
    assert options_of(WaitOptions, "wait", "h", "--history", str(tmp_path / "a")).history == tmp_path / "a"
    assert options_of(WatchOptions, "watch", "h").history == default_path()


def test_kill_9_mid_write_leaves_a_consistent_file(tmp_path: Path, spawn: Spawner) -> None:
    path = tmp_path / "h.sqlite3"
    for round_ in range(3):
        writer = start_writer(path, f"w{round_}", 10**6)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # let it get well into writing, then kill it mid-transaction
            if path.exists() and consistent_count(path) >= 5 * (round_ + 1):
                break
            time.sleep(0.05)
        writer.send_signal(signal.SIGKILL)
        writer.wait(10)
    n = consistent(path)
    assert n >= 15
    with HistoryStore(path) as store:  # and it still takes writes
        store.record_launch(rec("after"))


def consistent_count(path: Path) -> int:
    try:
        db = sqlite3.connect(str(path), timeout=10)
        return int(db.execute("SELECT COUNT(*) FROM launches").fetchone()[0])
    except sqlite3.DatabaseError:
        return 0


def test_two_writers_at_once(tmp_path: Path, spawn: Spawner) -> None:
    path = tmp_path / "h.sqlite3"
    writers = [start_writer(path, name, 40) for name in ("a", "b")]
    for w in writers:
        assert w.wait(120) == 0
    assert consistent(path) == 80


def test_one_launch_is_one_row_whatever_key_a_later_look_gives_it(tmp_path: Path) -> None:
    """The same launch of the same server (host, port, log, first line) seen by a later look that learnt SGLang's
    version (/server_info answered only after the first watcher left): the first line's row stands, one row. A row
    that knows less (unfinished) takes the better record whole, key included."""
    from dataclasses import replace

    first = replace(rec("log a"), port=30000, log="/l", seen_from="first_line")
    late = replace(rec("log a", key="k1-v0.5.23", scale=2.0), port=30000, log="/l", seen_from="late")
    with HistoryStore(tmp_path / "h.sqlite3") as store:
        row_id = store.record_launch(first)
        before = store.launch(row_id)
        assert store.record_launch(late) == row_id
        assert store.launches() == [before]  # nothing of the late look rewrote it
        left = replace(rec("log b", outcome="unfinished"), port=30000, log="/l")
        other = store.record_launch(left)
        better = replace(rec("log b", key="k1-v0.5.23"), port=30000, log="/l")
        assert store.record_launch(better) == other
        row = store.launch(other)
        assert row is not None and row["outcome"] == "ready" and row["key_id"] == "k1-v0.5.23"
        assert len(store.launches()) == 2
        elsewhere = replace(rec("log a", key="k2"), port=30001, log="/l")  # another server: its own row
        assert store.record_launch(elsewhere) not in (row_id, other)
