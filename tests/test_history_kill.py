"""The history file against real watchers: `python -m tui wait local --history FILE` against the simulator, killed
with SIGKILL around the moment it records, and several `wait`s recording into one file at once. After each kill
the file passes `PRAGMA integrity_check` and `sglang-tui history --json` reads it; the killed watcher's launch is
at most missing, never a half-written row."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.processes import Sims
from tests.helpers.sim import ROOT, SimServer

OUTCOMES = {"ready", "failed", "stalled", "stopped", "unfinished"}


def start_wait(sim: SimServer, history: Path, *extra: str) -> subprocess.Popen[str]:
    """`wait --json` in its own session, so a kill takes the watcher and anything it started."""
    return subprocess.Popen(
        [sys.executable, "-m", "tui", "wait", "local", "--log", str(sim.log), "--port", str(sim.port),
         "--sim-gpus", str(sim.gpu_state), "--timeout", "150", "--json", "--history", str(history), *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def kill_9(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session (start_new_session): only what it started
    except ProcessLookupError:
        pass
    proc.wait(30)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def integrity(path: Path) -> str:
    db = sqlite3.connect(str(path), timeout=15)
    try:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        db.close()


def history_rows(path: Path) -> list[dict[str, object]]:
    shown = subprocess.run([sys.executable, "-m", "tui", "history", "--json", "--history", str(path)],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    rows: list[dict[str, object]] = json.loads(shown.stdout)["launches"]
    assert shown.returncode == (0 if rows else 6), shown.stderr  # an empty listing is "nothing found"
    return rows


def assert_whole(row: dict[str, object]) -> None:
    """A row as one transaction wrote it: key, outcome, and for a ready launch its phases and total."""
    key = row["key"]
    assert isinstance(key, dict) and key["model"] and key["host"] == "local"
    assert row["outcome"] in OUTCOMES
    if row["outcome"] == "ready":
        phases = row["phases"]
        assert isinstance(phases, list) and {p["phase"] for p in phases} >= {"loading_weights", "cuda_graph"}
        assert isinstance(row["total_s"], float) and row["total_s"] > 0


def test_kill_9_of_a_real_wait_around_its_record_leaves_a_readable_history(tmp_path: Path, sim: Sims) -> None:
    history = tmp_path / "history.sqlite3"
    server = sim(tmp_path, speed=50.0, tp=2, shards=8)
    try:
        # 1: the watcher of the live launch, killed as it turns ready (the record is written at ready)
        first = start_wait(server, history)
        assert first.stdout is not None
        for line in first.stdout:
            if json.loads(line)["phase"] in ("warmup", "ready", "serving"):
                break
        kill_9(first)
        assert integrity(history) == "ok"
        for row in history_rows(history):
            assert_whole(row)
        # 2: the launch is ready now: a new watcher folds the log, records it as ready, reads /server_info and
        # records it again with the version (about 0.2-0.4 s after its start on an idle machine). Killed at
        # staggered moments after its first JSON line (written right after the first record) or after its start,
        # some land before, some during, some after those writes.
        killed_live = 0
        rounds = [("line", d) for d in (0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.08, 0.12)]
        rounds += [("start", d) for d in (0.1, 0.2, 0.3, 0.4)]
        for anchor, delay in rounds:
            proc = start_wait(server, history)
            if anchor == "line":
                assert proc.stdout is not None
                proc.stdout.readline()
            time.sleep(delay)
            killed_live += proc.poll() is None
            kill_9(proc)
            assert integrity(history) == "ok"
            rows = history_rows(history)
            assert len(rows) <= 1  # one launch: recorded again it is the same row, never a second or a torn one
            for row in rows:
                assert_whole(row)
        assert killed_live >= 1  # the kills hit running watchers, not only ones that had finished
        # 3: a watcher left alone records it, into the same file
        last = start_wait(server, history)
        out, err = last.communicate(timeout=150)
        assert last.returncode == 0, err
    finally:
        server.stop()
    assert integrity(history) == "ok"
    rows = history_rows(history)
    assert len(rows) == 1 and rows[0]["outcome"] == "ready"
    assert_whole(rows[0])
    assert rows[0]["key"]["version"] == "0.5.23"


def test_two_waits_at_once_on_one_history_file_both_record(tmp_path: Path, sim: Sims) -> None:
    history = tmp_path / "history.sqlite3"
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    sims = [
        sim(tmp_path / "a", speed=50.0, tp=2, shards=8),
        sim(tmp_path / "b", speed=50.0, tp=1, shards=8),
    ]
    try:
        waits = [start_wait(sims[0], history), start_wait(sims[1], history), start_wait(sims[0], history)]
        for proc in waits:
            _, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, err
    finally:
        for server in sims:
            server.stop()
    assert integrity(history) == "ok"
    rows = history_rows(history)
    # two launches (tp 2 and tp 1); the third watcher saw the first launch again: the same row, not a third
    assert sorted(r["key"]["tp"] for r in rows) == [1, 2]
    for row in rows:
        assert row["outcome"] == "ready" and row["startup_time_s"] is not None
        assert_whole(row)
