"""The history as a value (issue 26, items 7 and 17): a row whose figures no launch can have (1e308 s, -100 s,
text where a number goes, a broken JSON key) is left out and named, never a crash, a verdict or "-0.0× slower";
a file that is not one (a directory, /dev/null) or is corrupt is one line. Real SQLite files throughout; `wait`
against the real simulator where a verdict is involved, `history` as a user runs it."""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.processes import Cli, Sims
from tui.core.benchstats import BenchResult
from tui.core.events import ServerArgs
from tui.core.launchkey import key_fields, launch_key
from tui.core.past import OddRow
from tui.core.readiness import reduce
from tui.core.state import Readiness, ServerInfo
from tui.history.recorder import Recorder
from tui.history.store import SCHEMA_VERSION, HistoryError, HistoryStore, LaunchRecord

SERVER = ServerInfo(model="/m/Qwen", tp_size=2)
KEY = launch_key(SERVER, "gpu1") or ""
GOOD = (("loading_weights", 60.0), ("cuda_graph", 30.0))


def _seed(store: HistoryStore, mark: str, phases: tuple[tuple[str, Any], ...], total: Any = 90.0,
          key: str = KEY, fields: dict[str, object] | None = None, started: float = 0.0) -> int:  # fmt: skip
    return store.record_launch(LaunchRecord(
        key=key, key_fields=fields or key_fields(SERVER, "gpu1"), start_mark=mark, source="wait", outcome="ready",
        started_at=started, total_s=total, phases=tuple((p, "main", None, None, d) for p, d in phases),
    ))  # fmt: skip


def _odd_file(path: Path) -> dict[str, int]:
    with HistoryStore(path) as store:
        ids = {
            "good": _seed(store, "log a", GOOD, started=5.0),
            "huge": _seed(store, "log b", (("loading_weights", 1e308), ("cuda_graph", 30.0)), started=4.0),
            "negative": _seed(
                store, "log c", (("loading_weights", 60.0), ("cuda_graph", -100.0)), total=-100.0, started=3.0
            ),  # fmt: skip
            "text": _seed(store, "log d", (("loading_weights", "abc"),), started=2.0),
            "infinite": _seed(store, "log e", GOOD, total=float("inf"), started=1.0),
        }
    return ids


def test_odd_rows_are_left_out_of_the_past_and_named(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    ids = _odd_file(path)
    with HistoryStore(path) as store:
        past = store.past(KEY)
    assert [p.launch_id for p in past.launches] == [ids["good"]]
    assert past.durations("cuda_graph") == (30.0,) and past.totals() == (90.0,)
    assert past.median("cuda_graph") is None  # one launch is no median (tui.core.past.MIN_LAUNCHES)
    assert past.skipped == (
        f"launch {ids['huge']}: loading_weights 1e+308 s is not a duration",
        f"launch {ids['negative']}: cuda_graph -100 s is not a duration",
        f"launch {ids['text']}: loading_weights 'abc' is not a number",
        f"launch {ids['infinite']}: total inf s is not a duration",
    )
    assert past.skipped_words() == (
        f"left out of the ETA: 4 odd rows (launch {ids['huge']}: loading_weights 1e+308 s is not a duration; "
        f"launch {ids['negative']}: cuda_graph -100 s is not a duration; launch {ids['text']}: loading_weights "
        "'abc' is not a number; 1 more)"
    )


def test_listing_leaves_odd_rows_out_and_launch_names_one(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    ids = _odd_file(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE launches SET key_json = '{bad' WHERE id = ?", (ids["good"],))
    with HistoryStore(path) as store:
        rows, skipped = store.listing()
        assert rows == [] and len(skipped) == 5
        assert skipped[0] == f"launch {ids['good']}: key '{{bad' is not a JSON object"
        with pytest.raises(OddRow, match="total inf s is not a duration"):
            store.launch(ids["infinite"])
        assert store.launch(10**30) is None and store.launch(-1) is None  # no row, never an OverflowError


def test_a_recorder_names_odd_rows_once_and_keeps_the_good_past(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    _odd_file(path)
    said: list[str] = []
    rec = Recorder(path, "gpu1", "wait", say=said.append)
    state = reduce(Readiness(), ServerArgs(model="/m/Qwen", tp_size=2, at="2026-01-01 10:00:00", t=0.0), 1.0)
    for _ in range(3):
        state = rec.update(state)
    rec.finish(state)
    assert state.past is not None and state.past.count == 1
    assert len(said) == 1 and said[0].startswith(f"history {path}: left out of the ETA: 4 odd rows (launch 2: ")


def test_a_corrupt_file_is_one_line_for_the_whole_run(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    with HistoryStore(path) as store:
        for i in range(200):  # pages enough that the tables lie beyond the first page
            _seed(store, f"log {i}", GOOD, key=f"k{i}")
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = path.stat().st_size
    with open(path, "r+b") as f:  # the header page (schema, version) stays whole; every table page is garbage
        for offset in range(4096, size, 4096):
            f.seek(offset)
            f.write(b"\xde\xad\xbe\xef" * 1024)
    said: list[str] = []
    rec = Recorder(path, "gpu1", "wait", say=said.append)
    state = reduce(Readiness(), ServerArgs(model="/m/Qwen", tp_size=2, at="2026-01-01 10:00:00", t=0.0), 1.0)
    for _ in range(3):
        state = rec.update(state)
    rec.finish(state)
    # before: a second line, "'NoneType' object has no attribute 'past'"
    assert said == [f"history {path}: database disk image is malformed; move the file away or pass --no-history;"
                    " history is off for this run"]  # fmt: skip


def test_what_is_not_a_file_is_refused_before_sqlite_touches_it(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, what in ((tmp_path, "a directory"), (fifo, "not a regular file")):
        with pytest.raises(HistoryError) as err:
            HistoryStore(path)
        assert str(err.value) == f"history {path}: {what}; pass --history FILE or --no-history"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]  # no fifo-journal, -wal or -shm beside it


def test_a_stored_bench_that_is_no_bench_is_a_value_error() -> None:
    for odd in ({"requests": {"ok": "many"}}, {"ttft_s": {"p50": float("nan")}}, {"sampling": ["x"]}, {"errors": 3}):
        with pytest.raises(ValueError, match="not a bench result"):
            BenchResult.from_json(odd)


# ------------------------------------------------------------------------------------------ real processes


@dataclass
class Watched:
    code: int
    lines: list[dict[str, object]]  # wait --json, one object per state change
    stderr: str


def watch_launch(sim: Sims, cli: Cli, history: Path, *sim_args: str) -> Watched:
    """One simulated launch (the same key every time) watched to its verdict by `wait --json --history`."""
    server = sim(speed=20.0, tp=2, shards=8, extra=sim_args)
    try:
        proc = cli.popen("wait", "local", "--log", server.log, "--port", str(server.port), "--sim-gpus",
                         server.gpu_state, "--timeout", "120", "--json", "--history", history)  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        lines = [json.loads(line) for line in proc.stdout]
        return Watched(proc.wait(30), lines, proc.stderr.read())
    finally:
        server.stop()


def test_wait_with_odd_rows_of_its_key_says_ready_and_names_them(tmp_path: Path, sim: Sims, cli: Cli) -> None:
    """Launch one is watched and recorded; two odd copies of it join the file (init -100 s, every phase after
    the weights 1e308 s: the medians, with launch one's, of three). Launch two is watched to ready: exit 0, one
    line naming the odd rows, every ETA sane. Before: OverflowError in the ETA (exit 1: 'failed', for a ready
    server), and "init -0.0× slower than usual" from the negative median."""
    history = tmp_path / "history.sqlite3"
    first = watch_launch(sim, cli, history, "--seed", "1")
    assert first.code == 0, first.stderr
    after_weights = ("kv_cache", "cuda_graph", "warmup")
    with HistoryStore(history) as store:
        (row,) = store.launches()
        fields, key = row["key"], str(row["key_id"])
        main = [(str(p["phase"]), float(p["duration_s"])) for p in row["phases"] if p["model"] == "main"]
        odd = tuple((p, -100.0 if p == "init" else 1e308 if p in after_weights else d) for p, d in main)
        assert {p for p, _ in odd} >= {"init", *after_weights}
        ids = [_seed(store, f"log odd {i}", odd, total=row["total_s"], key=key, fields=fields) for i in (1, 2)]
    second = watch_launch(sim, cli, history, "--seed", "2")
    assert second.code == 0, second.stderr
    assert "Traceback" not in second.stderr
    named = [line for line in second.stderr.splitlines() if "odd row" in line]
    assert named == [f"sglang-tui: history {history}: left out of the ETA: 2 odd rows (launch {ids[1]}: init -100 s"
                     f" is not a duration; launch {ids[0]}: init -100 s is not a duration)"]  # fmt: skip
    etas = [obj["eta"]["ready_in_s"] for obj in second.lines if obj["eta"]["ready_in_s"] is not None]
    # the odd rows left out, launch one alone is no median (tui.core.past.MIN_LAUNCHES): no ETA from history, and
    # never one from 1e308 s (with the odd rows counted, three launches would give one)
    assert etas == []
    assert "slower than usual" not in second.stderr  # one good launch is too few to call a phase slow


def test_history_command_fuzzed_inputs_are_one_line_each(tmp_path: Path, cli: Cli) -> None:
    """The inputs that gave tracebacks or wrote beside the file (issue 26, item 17), and their neighbours."""
    good = tmp_path / "good.sqlite3"
    with HistoryStore(good) as store:
        _seed(store, "log a", GOOD)
    odd = tmp_path / "odd.sqlite3"
    ids = _odd_file(odd)
    future = tmp_path / "future.sqlite3"
    with sqlite3.connect(future) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 7}")
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"not sqlite" * 500)
    journal = Path("/dev/null-journal")
    journal_before = journal.stat().st_mtime_ns if journal.exists() else None
    cases = [
        (("--compare", "1", str(10**20), "--history", str(good)), 6,
         f"no launch {10**20} in {good}; `sglang-tui history` lists them"),
        (("--compare", "1", "0", "--history", str(good)), 6, f"no launch 0 in {good}; `sglang-tui history` lists them"),
        (("--compare", str(ids["huge"]), str(ids["good"]), "--history", str(odd)), 2,
         f"launch {ids['huge']} in {odd} cannot be shown (loading_weights 1e+308 s is not a duration); compare another"),
        (("--history", str(tmp_path)), 2, f"history {tmp_path}: a directory; pass --history FILE or --no-history"),
        (("--history", "/dev/null"), 2, "history /dev/null: not a regular file; pass --history FILE or --no-history"),
        (("--history", str(junk)), 2, f"history {junk}: file is not a database; move the file away or pass --no-history"),
        (("--history", str(future)), 2, f"history {future} has schema {SCHEMA_VERSION + 7}, newer than this "
                                         f"sglang-tui's {SCHEMA_VERSION}; upgrade it"),
    ]  # fmt: skip
    for args, code, line in cases:
        done = cli("history", *args, timeout=60)
        assert (done.returncode, done.stdout, done.stderr) == (code, "", f"sglang-tui history: {line}\n"), args
    # /dev/null: nothing written beside it (before, SQLite made /dev/null-journal)
    assert (journal.stat().st_mtime_ns if journal.exists() else None) == journal_before
    big = cli("history", "--limit", str(10**20), "--history", str(good))
    assert big.returncode == 0 and big.stderr == "" and len(big.stdout.splitlines()) == 4  # header, row, "", key
    listing = cli("history", "--history", str(odd), "--json")
    assert listing.returncode == 0 and [r["id"] for r in json.loads(listing.stdout)["launches"]] == [ids["good"]]
    assert listing.stderr.startswith("sglang-tui history: not shown: 4 odd rows (") and listing.stderr.count("\n") == 1
