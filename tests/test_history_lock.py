"""A history file that cannot be written never delays a verdict nor throws a result away (issue 26, items 9 and
11). The file is a real SQLite file; its lock is held by a real second process inside a write transaction
(tests/helpers/sqlite_lock.py), in WAL mode and with a rollback journal (where it keeps readers out too). The
servers are the real simulator.

Each subprocess's own timeout is the stop condition: before, a locked file held `wait` for SQLite's 15 s busy
timeout on top of its verdict (a ready server: exit at 15.8 s; --timeout 10: at 23.4 s)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Sims, Spawner
from tests.helpers.sim import SimServer, wait_ready
from tests.helpers.sqlite_lock import hold
from tui.core.exitcodes import EXIT_TIMEOUT
from tui.history.store import HistoryStore

STOP_S = 60.0  # a guard, not a measure: the lock's own wait is the "waited 2 s" line (a loaded box made 12 s too short)


def history_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "history" in line]


@pytest.fixture(scope="module")
def ready_sim(module_sim: Sims) -> SimServer:
    return wait_ready(module_sim(tp=2, shards=4))


@pytest.fixture
def recorded(tmp_path: Path, ready_sim: SimServer, cli: Cli) -> Path:
    """A history file holding the ready simulator's launch (host `local`), as `replay --record` writes it."""
    path = tmp_path / "history.sqlite3"
    done = cli("replay", "--record", "local", str(ready_sim.log), "--history", str(path), timeout=60)
    assert done.returncode == 0, done.stderr
    return path


@pytest.mark.parametrize("rollback", [False, True], ids=["wal", "rollback"])
def test_wait_on_a_ready_server_with_a_locked_history_says_ready_then_one_line(
    ready_sim: SimServer, recorded: Path, cli: Cli, spawn: Spawner, rollback: bool
) -> None:
    holder = hold(spawn, recorded, rollback=rollback)
    try:
        done = cli("wait", "local", "--port", str(ready_sim.port), "--log", str(ready_sim.log), "--history",
                   str(recorded), "--timeout", "10", timeout=STOP_S)  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 0, done.stderr
    assert any(line.startswith("sglang-tui wait: ready") for line in done.stderr.splitlines())
    assert history_lines(done.stderr) == [
        f"sglang-tui: history {recorded}: locked by another process (waited 2 s); history is off for this run"
    ]
    assert "Traceback" not in done.stderr


def test_wait_that_times_out_with_a_locked_history_exits_at_its_timeout(
    recorded: Path, sim: Sims, cli: Cli, spawn: Spawner
) -> None:
    loading = sim(
        tp=2, shards=64, speed=1.0
    )  # loading for minutes: --timeout 10 decides (long enough for the first look on a loaded machine)
    holder = hold(spawn, recorded)
    try:
        done = cli("wait", "local", "--port", str(loading.port), "--log", str(loading.log), "--history",
                   str(recorded), "--timeout", "10", timeout=STOP_S)  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == EXIT_TIMEOUT, done.stderr
    assert any(line.startswith("sglang-tui wait: timed out after 10s") for line in done.stderr.splitlines())
    (line,) = history_lines(done.stderr)  # the launch's 'unfinished' row is the write the lock holds up
    assert line.startswith(f"sglang-tui: history {recorded}: ") and "another process" in line
    with HistoryStore(recorded) as store:  # the holder gone, the file is whole; the row it held up never landed
        assert [r["outcome"] for r in store.launches()] == ["ready"]


def _bench(
    cli: Cli, sim: SimServer, history: Path, prefix: tuple[str, ...] = ()
) -> tuple[dict[str, object], list[str]]:
    done = cli("bench", "local", "--port", str(sim.port), "--requests", "2", "--max-tokens", "16", "--json",
               "--history", str(history), timeout=60, prefix=prefix)  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    obj = json.loads(done.stdout)  # the result came, whatever the history did
    assert obj["requests"] == {"ok": 2, "failed": 0}
    return obj, history_lines(done.stderr)


def test_bench_with_a_locked_history_prints_its_result_then_one_line(
    ready_sim: SimServer, recorded: Path, cli: Cli, spawn: Spawner
) -> None:
    holder = hold(spawn, recorded)
    try:
        _, lines = _bench(cli, ready_sim, recorded)
    finally:
        holder.kill()
        holder.wait()
    assert lines == [
        f"sglang-tui bench: history not updated: history {recorded}: locked by another process (waited 2 s)"
    ]


def test_bench_with_a_history_it_cannot_write_prints_its_result_then_one_line(
    ready_sim: SimServer, recorded: Path, cli: Cli
) -> None:
    """The file one `sudo` run left: readable, not writable by the user. Here a 0444 file and a bench without
    CAP_DAC_OVERRIDE (and DAC_READ_SEARCH), so the kernel refuses the write to root as to any user."""
    recorded.chmod(0o444)
    for extra in ("-wal", "-shm"):
        if recorded.with_name(recorded.name + extra).exists():
            recorded.with_name(recorded.name + extra).chmod(0o444)
    no_override = ("setpriv", "--bounding-set=-dac_override,-dac_read_search",
                   "--inh-caps=-dac_override,-dac_read_search")  # fmt: skip
    _, lines = _bench(cli, ready_sim, recorded, prefix=no_override)
    (line,) = lines
    assert line.startswith(f"sglang-tui bench: history not updated: history {recorded}: ")
    assert "readonly" in line or "unable to open" in line


def test_bench_with_an_odd_stored_bench_prints_its_result_and_records_it(
    ready_sim: SimServer, recorded: Path, cli: Cli
) -> None:
    with sqlite3.connect(recorded) as db:
        (launch_id,) = db.execute("SELECT id FROM launches").fetchone()
        db.execute("INSERT INTO bench (launch_id, recorded_at, result) VALUES (?, 1.0, ?)",
                   (launch_id, '{"requests": {"ok": "many"}}'))  # fmt: skip
    obj, lines = _bench(cli, ready_sim, recorded)
    (line,) = lines
    assert line.startswith(f"sglang-tui bench: history {recorded}: the last bench is unreadable (not a bench result")
    assert line.endswith("; compared with nothing")
    with sqlite3.connect(recorded) as db:
        (stored,) = db.execute("SELECT result FROM bench ORDER BY id DESC LIMIT 1").fetchone()
    assert json.loads(stored)["requests"] == obj["requests"]
