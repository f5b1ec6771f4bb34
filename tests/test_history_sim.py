"""The launch history end to end: the real simulator, `python -m tui wait --json --history FILE` (a real SQLite
file), launch after launch. Shows the ETA to ready from history, the honest shard ETA during a hang, and a
regression flagged while it happens."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.processes import Cli, Sims, Spawner
from tests.helpers.sshd import free_port
from tui.core.eta import WITHDRAW_AFTER
from tui.history.store import HistoryStore

# A 16-shard launch takes ~11 s: a shard per ~0.4 s (more than the tail's 0.25 s poll, so the shard count is
# seen to move one by one), and the history's clock-timed phases are long enough for a 20 % ETA check.
SPEED = 20.0
SHARDS = 16
STALL_AFTER = 5.0


@dataclass
class Watched:
    code: int
    lines: list[tuple[float, dict[str, Any]]] = field(default_factory=list)  # (seconds since start, JSON)
    stderr: str = ""

    def first(self, phase: str) -> float:
        return next(t for t, obj in self.lines if obj["phase"] == phase)


def watch_launch(cli: Cli, sims: Sims, tmp: Path, history: Path, *sim_args: str, wait_args: tuple[str, ...] = (),
                 timeout: float = 120, fault: str | None = None) -> Watched:  # fmt: skip
    """One simulated launch watched by `wait --json` from its first line; each JSON line stamped when it arrived.
    `wait` starts first, on the log not there yet: one that attaches after the weights began (the log's clock
    says so) sees a load mid-way, whose GPU memory before it is unknown, and records no weights' GiB."""
    tmp.mkdir(parents=True, exist_ok=True)
    port, log, gpus = free_port(), tmp / "sim.log", tmp / "gpus"
    start = time.monotonic()
    proc = cli.popen("wait", "local", "--log", log, "--port", str(port), "--sim-gpus", gpus,
                     "--timeout", str(timeout), "--json", "--history", history, *wait_args)  # fmt: skip
    assert proc.stdout is not None
    out = Watched(0)
    for line in proc.stdout:  # until it has looked at the log (missing): it reads the launch from its first byte
        out.lines.append((time.monotonic() - start, json.loads(line)))
        if "log file missing" in str(out.lines[-1][1]["reason"]):
            break
    sim = sims(tmp, port=port, speed=SPEED, tp=2, shards=SHARDS, fault=fault, extra=sim_args)
    try:
        for line in proc.stdout:
            out.lines.append((time.monotonic() - start, json.loads(line)))
        out.code = proc.wait(30)
        out.stderr = proc.stderr.read() if proc.stderr else ""
        return out
    finally:
        sim.stop()


@pytest.fixture(scope="module")
def launches(tmp_path_factory: pytest.TempPathFactory, module_sim: Sims,
             module_spawn: Spawner) -> tuple[Path, list[Watched]]:  # fmt: skip
    """Two normal launches of the same key (different seeds: a few percent of jitter), then one with capture
    made three times as slow, then a normal one again, all recorded into one history file (one after the other:
    each rests on the ones before). Every capture is made twice as long as the simulator's (3 s at this speed):
    once ready, durations come from the log's whole-second stamps, and no ratio is taken over a median under
    tui.core.eta.RATIO_FLOOR_S (5 s), so a 3 s capture could never be called slow. A median needs two launches
    (tui.core.past.MIN_LAUNCHES): the ETA from history is checked on the fourth."""
    root = tmp_path_factory.mktemp("hist")
    history = root / "history.sqlite3"
    cli = Cli(module_spawn)
    runs = [
        watch_launch(cli, module_sim, root / "one", history, "--seed", "1", "--slow", "cuda_graph=2"),
        watch_launch(cli, module_sim, root / "two", history, "--seed", "2", "--slow", "cuda_graph=2"),
        watch_launch(cli, module_sim, root / "slow", history, "--seed", "3", "--slow", "cuda_graph=6"),
        watch_launch(cli, module_sim, root / "four", history, "--seed", "4", "--slow", "cuda_graph=2"),
    ]
    return history, runs


def test_first_launch_has_no_eta_to_ready_and_is_recorded(launches: tuple[Path, list[Watched]]) -> None:
    history, runs = launches
    first = runs[0]
    assert first.code == 0, first.stderr
    assert all(obj["eta"]["ready_in_s"] is None for _, obj in first.lines)  # no history: no ETA to ready
    assert any(obj["eta"]["basis"] == "progress" for _, obj in first.lines)  # the shard bar's own ETA only
    with HistoryStore(history) as store:
        rows = store.launches()
    assert [r["outcome"] for r in rows] == ["ready", "ready", "ready", "ready"]
    assert {r["seen_from"] for r in rows} == {"first_line"}  # `wait` began before the log was there
    oldest = rows[-1]
    phases = {p["phase"] for p in oldest["phases"] if p["model"] == "main"}
    assert {"init", "loading_weights", "kv_cache", "cuda_graph", "warmup"} <= phases
    assert any(p["model"] == "draft" for p in oldest["phases"])  # EAGLE3's draft spans are kept too
    assert oldest["shards"] == SHARDS and oldest["weight_gib_per_rank"] and oldest["startup_timings"]
    assert oldest["key"]["tp"] == 2 and oldest["key"]["speculative"] == "EAGLE3" and oldest["key"]["args_hash"]


def _quarter(watched: Watched) -> tuple[float, dict[str, Any]]:
    """The first JSON line at 25 % of the weights: (when it came, the object)."""
    quarter = [(t, obj) for t, obj in watched.lines if obj["phase"] == "loading_weights"
               and obj["shards"] and obj["shards"]["done"] == SHARDS // 4]  # fmt: skip
    assert quarter, "no JSON line at 25% of the weights"
    return quarter[0]


def test_fourth_launch_eta_at_a_quarter_of_the_weights(launches: tuple[Path, list[Watched]]) -> None:
    """The fourth launch's ETA at a quarter of its weights rests on history: the phase's own progress (the one
    figure the bar shows), then the median of each later phase over the three launches before it. Not held to the
    wall clock: CI's load changes a launch's pace from one second to the next, which no ETA can know (CI saw a
    slow first quarter make 24.9 s of an 11.6 s start)."""
    history, runs = launches
    fourth = runs[3]
    assert fourth.code == 0, fourth.stderr
    t, obj = _quarter(fourth)
    eta = obj["eta"]
    assert eta["basis"] == "history" and eta["launches"] == 3
    took = sorted(run.first("ready") - _quarter(run)[0] for run in runs[:3])
    print(f"at 4/16 shards: ready_in_s {eta['ready_in_s']}; the launches before took {took}; this one "
          f"{fourth.first('ready') - t:.1f}")  # fmt: skip
    with HistoryStore(history) as store:
        key = store.launches(limit=1)[0]["key_id"]
        past = store.past(key, exclude_mark=store.launches(limit=1)[0]["start"])
    assert past.count == 3
    later = sum(past.median(p) or 0.0 for p in ("kv_cache", "cuda_graph", "warmup"))
    assert eta["ready_in_s"] == pytest.approx(eta["phase_left_s"] + later, abs=0.2), (eta, later)
    said = re.search(r"ETA (\d+) s", obj["reason"])  # the bar's own figure is the phase's part of it
    assert said is not None and abs(int(said.group(1)) - eta["phase_left_s"]) <= 1, (obj["reason"], eta)


def test_a_line_whenever_the_shard_count_changes(launches: tuple[Path, list[Watched]]) -> None:
    second = launches[1][1]
    counts = [obj["shards"]["done"] for _, obj in second.lines if obj["shards"] and obj["phase"] == "loading_weights"]
    seen = sorted(set(counts))
    assert seen[-1] == SHARDS and len(seen) >= SHARDS - 2  # (two shards can land in one batch)


def test_slow_capture_is_flagged_during_capture(launches: tuple[Path, list[Watched]]) -> None:
    slow = launches[1][2]  # its past: two launches
    assert slow.code == 0, slow.stderr
    flagged = [obj for _, obj in slow.lines if obj["phase"] == "cuda_graph" and "capture" in obj["reason"]
               and "slower than usual" in obj["reason"]]  # fmt: skip
    assert flagged, [obj["reason"] for _, obj in slow.lines if obj["phase"] == "cuda_graph"][-3:]
    print("flagged:", flagged[0]["reason"])
    final = slow.lines[-1][1]
    assert "capture was" in final["reason"] and "slower than usual" in final["reason"]  # and in the summary
    normal = launches[1][3]  # its past holds the slow one: the median of three is a normal capture
    assert not any("slower than usual" in obj["reason"] for _, obj in normal.lines)


def test_hang_weights_withdraws_the_shard_eta_and_the_stall_has_no_eta(tmp_path: Path, cli: Cli, sim: Sims) -> None:
    """Withdrawn after WITHDRAW_AFTER mean shard intervals of silence (about a second), well before the stall (5 s)."""
    history = tmp_path / "history.sqlite3"
    out = watch_launch(cli, sim, tmp_path / "hang", history, fault="hang-weights",
                       wait_args=("--stall-after", f"{STALL_AFTER:g}"))  # fmt: skip
    assert out.code == 3, out.stderr  # stalled
    loading = [(t, obj) for t, obj in out.lines if obj["phase"] == "loading_weights" and obj["shards"]]
    changes: list[tuple[float, int]] = []  # (time, done) each time the count moved
    for t, obj in loading:
        if not changes or obj["shards"]["done"] != changes[-1][1]:
            changes.append((t, obj["shards"]["done"]))
    last_t = changes[-1][0]
    interval = (last_t - changes[1][0]) / (len(changes) - 2)  # from the first moved shard on
    withdrawn = [(t, obj) for t, obj in loading if "no progress for" in obj["reason"]]
    assert withdrawn, [obj["reason"] for _, obj in loading][-3:]
    t_w, first_w = withdrawn[0]
    print(f"mean shard interval {interval:.2f} s; ETA withdrawn {t_w - last_t:.2f} s after the last shard")
    assert first_w["eta"]["phase_left_s"] is None and "shards/s" not in first_w["reason"]
    assert f"stalled at {STALL_AFTER:.1f}s" in first_w["reason"]
    # the model's own clock: the silence it reports when it withdrew is past WITHDRAW_AFTER intervals, by at most a tick
    silent = int(first_w["reason"].split("no progress for ")[1].split(" s")[0])
    assert silent <= WITHDRAW_AFTER * interval + 2.0
    final = out.lines[-1][1]
    assert final["eta"]["ready_in_s"] is None and final["eta"]["phase_left_s"] is None
    assert final["reason"].startswith("stalled in loading weights")
    with HistoryStore(history) as store:
        assert [r["outcome"] for r in store.launches()] == ["stalled"]
