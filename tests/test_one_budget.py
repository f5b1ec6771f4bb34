"""One stall budget for one server (issue 30): the fleet board's "allows" is `wait`'s "limit", read from both for
the same stalled server and the same history. On the real simulator, `replay --record`, `wait` and `fleet --once`.

Two quick launches are recorded first (a median needs two: tui.core.past.MIN_LAUNCHES), so the budget is the
history's (its floor, 2 minutes, under the 5 minutes of a capture with no history): a view that missed the past
would say 5m00s. The hang is 200 s old without waiting: `simulate --backdate 200` writes its stamps and its mtime
200 s back, so every view finds it stalled at its first look."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.processes import Cli, Sims
from tests.helpers.sim import wait_for_log
from tui.core.exitcodes import EXIT_STALLED
from tui.core.stall import HISTORY_FLOOR_S
from tui.history.store import HistoryStore

SIM = {"speed": 100.0, "tp": 2, "shards": 4, "speculative": "none"}


def test_the_boards_allows_is_waits_limit(sim: Sims, cli: Cli, tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite3"
    for seed in ("1", "2"):
        done = sim(tmp_path / f"run{seed}", **SIM, extra=("--seed", seed))
        wait_for_log(done, b"fired up", 90)
        recorded = cli("replay", str(done.log), "--record", "local", "--history", str(history))
        assert recorded.returncode == 0, recorded.stderr
    with HistoryStore(history) as store:
        assert [row["outcome"] for row in store.launches()] == ["ready", "ready"]

    hung = sim(tmp_path / "hung", **SIM, fault="hang-capture", extra=("--seed", "3", "--backdate", "200"))
    wait_for_log(hung, b"Capturing batches", 90)
    target = ("--log", str(hung.log), "--port", str(hung.port), "--sim-gpus", str(hung.gpu_state))
    waited = cli("wait", "local", *target, "--history", str(history), "--timeout", "90", timeout=120)
    assert waited.returncode == EXIT_STALLED, waited.stderr
    limit = re.search(r"\(limit (\S+) in ", waited.stderr)
    assert limit is not None, waited.stderr

    board = cli("fleet", "--once", f"local:{hung.port}:{hung.log}", "--sim-gpus", str(hung.gpu_state),
                "--history", str(history), "--timeout", "90", timeout=120)  # fmt: skip
    assert board.returncode == EXIT_STALLED, (board.stdout, board.stderr)
    allows = re.search(r"\(allows (\S+)\)", board.stderr + board.stdout)
    assert allows is not None, (board.stdout, board.stderr)
    assert allows.group(1) == limit.group(1) == f"{int(HISTORY_FLOOR_S) // 60}m00s", (allows, limit)
