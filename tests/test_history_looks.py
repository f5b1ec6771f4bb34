"""The history is written from the log's clock: whatever looks a launch gets (from its first line, late, again,
two views at once, a restart in between), the history holds one row per launch whose phases are the log's.

Real parts: the reducer (tui.core.reduce), the Recorder with its worker thread and a real SQLite file. The looks
are what the log tail reports (a LogLook, the history's events, the LogLook that ends them, then live lines),
with the /health 200 that a live server gives; the times are chosen by Hypothesis."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.core.clockmap import LOG_IS_CLOCK
from tui.core.events import Event, HealthResult, LaunchStarted, LogLook, Milestone, ServerArgs
from tui.core.fold import Fold
from tui.core.launchkey import start_mark
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.history.recorder import Recorder
from tui.history.store import HistoryStore

T0 = 1_796_000_000.0  # the log's clock is the epoch here (zone 0): the mapping itself is tui.core.clocks' tests'
MILESTONES = ("init_begin", "load_begin", "load_end", "kv_alloc", "graph_begin", "graph_end", "uvicorn_running")


def _at(t: float) -> dict[str, object]:
    return {"at": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)), "t": t}


@dataclass(frozen=True)
class Line:
    """A line of the log: its event and when it was written (its stamp)."""

    t: float
    event: Event


def launch_lines(start: float, gaps: list[int], model: str) -> list[Line]:
    """One launch's lines: server_args, the milestones `gaps` seconds apart, then fired up."""
    lines = [Line(start, ServerArgs(model=model, tp_size=1, **_at(start)))]  # type: ignore[arg-type]
    t = start
    for kind, gap in zip((*MILESTONES, "fired_up"), gaps, strict=True):
        t += gap
        lines.append(Line(t, Milestone(kind, rank="TP0", **_at(t))))  # type: ignore[arg-type]
    return lines


def the_log(gaps: list[list[int]]) -> list[Line]:
    """One or two launches in one log (a restart: the second begins after the first fired up)."""
    lines: list[Line] = []
    start = T0
    for i, launch in enumerate(gaps):
        if i:
            lines.append(Line(start, LaunchStarted(**_at(start))))  # type: ignore[arg-type]
        lines += launch_lines(start, launch, "m")
        start = lines[-1].t + 30
    return lines


def the_logs_phases(lines: list[Line]) -> dict[str, list[tuple[str, float]]]:
    """Per launch (its start mark), the main phases and their durations on the log's own clock (as replay folds)."""
    s = Readiness.of(clock=LOG_IS_CLOCK)
    found: dict[str, list[tuple[str, float]]] = {}
    for line in lines:
        s = reduce(s, line.event, line.t)
        mark = start_mark(s)
        if mark is not None:
            found[mark] = [
                (span.phase.value, span.end_t - span.start_t)
                for span in s.timeline
                if span.model == "main" and span.start_t is not None and span.end_t is not None
            ]
    return found


@dataclass(frozen=True)
class Look:
    at: float  # when the watcher starts (our clock, = the log's here)
    until: float  # when it leaves
    source: str


def look(lines: list[Line], spec: Look, recorder: Recorder) -> Iterator[None]:
    """A watcher from `spec.at` to `spec.until`, as a generator: each next() folds one batch, so that two views
    can run at once, interleaved."""
    fold = Fold(steps=(recorder.step,))
    s = Readiness.of(log_watched=True, health_probed=True)
    history = [line for line in lines if line.t <= spec.at]
    newest = history[-1].t if history else None
    s = fold(s, [LogLook(end=100 * len(history), mtime_s=newest, skew_s=0.0, last_t=newest)], spec.at)
    yield
    s = fold(s, [line.event for line in history], spec.at)  # the look's bytes: the history, all at once
    yield
    s = fold(s, [LogLook(end=100 * len(history), mtime_s=newest, skew_s=0.0, last_t=newest, live=True)], spec.at)
    yield
    if s.log_ready:
        s = fold(s, [HealthResult("/health", "ok", status=200)], spec.at + 0.3)
        yield
    for line in lines[len(history) :]:
        if line.t > spec.until:
            break
        s = fold(s, [line.event], line.t + 0.05)  # read a moment after it was written
        yield
        if isinstance(line.event, Milestone) and line.event.kind == "fired_up":
            s = fold(s, [HealthResult("/health", "ok", status=200)], line.t + 0.4)
            yield
    recorder.finish(s, wait_s=3.0)


def run_looks(lines: list[Line], looks: list[Look], together: bool, path: Path) -> None:
    """The looks one after another, or (together) interleaved batch by batch, each with its own Recorder."""
    runs = [look(lines, spec, Recorder(path, "gpu1", spec.source, port=30000, log="/l/s.log")) for spec in looks]
    if not together:
        for run in runs:
            for _ in run:
                pass
        return
    while runs:
        for run in list(runs):
            if next(run, StopIteration) is StopIteration:
                runs.remove(run)


gaps_st = st.lists(st.integers(1, 90), min_size=len(MILESTONES) + 1, max_size=len(MILESTONES) + 1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    launches=st.lists(gaps_st, min_size=1, max_size=2),
    looks=st.lists(st.tuples(st.floats(-5, 1200), st.floats(0, 1200)), min_size=1, max_size=4),
    together=st.booleans(),
)
def test_one_row_per_launch_with_the_logs_phases(
    launches: list[list[int]], looks: list[tuple[float, float]], together: bool
) -> None:
    lines = the_log(launches)
    expected = the_logs_phases(lines)
    specs = [Look(T0 + a, T0 + a + d, f"view{i}") for i, (a, d) in enumerate(looks)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "h.sqlite3"
        run_looks(lines, specs, together, path)
        if not path.exists():
            return  # no look saw a server_args line: nothing to record
        with HistoryStore(path) as store:
            rows = store.launches(limit=100)
    marks = [row["start"] for row in rows]
    assert len(marks) == len(set(marks)), marks  # one row per launch, whoever looked and in whatever order
    for row in rows:
        phases = [(p["phase"], p["duration_s"]) for p in row["phases"] if p["model"] == "main"]
        log_phases = expected[row["start"]]
        if row["outcome"] == "ready":
            assert phases == log_phases, (row["seen_from"], phases, log_phases)
        else:  # the watcher left first: the phases it saw end are the log's, the open one is cut where it left
            assert phases[: len(phases) - 1] == log_phases[: len(phases) - 1]
    fired = {mark: t for mark, t in _fired_up(lines).items()}
    for row in rows:  # a launch some look saw before its ready says so; one seen only after its ready is late
        if row["outcome"] != "ready":
            continue
        live = any(spec.at < fired[row["start"]] <= spec.until for spec in specs)  # read live, as `look` reads
        assert row["seen_from"] == ("first_line" if live else "late"), (row["seen_from"], specs, fired)


def _fired_up(lines: list[Line]) -> dict[str, float]:
    """Per launch (its start mark), when its fired-up line was written."""
    found: dict[str, float] = {}
    start = None
    for line in lines:
        if isinstance(line.event, ServerArgs):
            start = f"log {_at(line.t)['at']}"
        if isinstance(line.event, Milestone) and line.event.kind == "fired_up" and start is not None:
            found[start] = line.t
    return found


def test_a_late_look_leaves_the_first_lines_record(tmp_path: Path) -> None:
    """`wait` from the first line, then a board and another `wait` long after ready: the row is the first one's,
    and a server first seen after ready is recorded late, on the log's clock, with the same phases."""
    lines = the_log([[2, 3, 20, 1, 2, 6, 1, 8]])
    fired = lines[-1].t
    path = tmp_path / "h.sqlite3"
    run_looks(lines, [Look(T0 - 1, fired + 5, "wait")], False, path)
    with HistoryStore(path) as store:
        (first,) = store.launches()
    run_looks(lines, [Look(fired + 40, fired + 45, "fleet"), Look(fired + 41, fired + 50, "wait")], False, path)
    with HistoryStore(path) as store:
        (after,) = store.launches()
        past = store.past(after["key_id"])
    assert first["seen_from"] == "first_line" and first["total_s"] == fired - T0 == 43.0
    assert {k: v for k, v in after.items() if k != "key"} == {k: v for k, v in first.items() if k != "key"}
    warmup = [p["duration_s"] for p in after["phases"] if p["phase"] == "warmup"]
    assert warmup == [8.0]  # uvicorn running to fired up in the log, not to our look 40 s later
    assert past.count == 1 and past.median("warmup") is None  # one launch is no median

    late_path = tmp_path / "late.sqlite3"
    run_looks(lines, [Look(fired + 40, fired + 45, "fleet")], False, late_path)
    with HistoryStore(late_path) as store:
        (late,) = store.launches()
    assert late["seen_from"] == "late" and late["total_s"] == 43.0
    assert late["phases"] == first["phases"]


def test_two_servers_of_one_key_in_the_same_second_are_two_rows(tmp_path: Path) -> None:
    lines = the_log([[2, 3, 20, 1, 2, 6, 1, 8]])
    path = tmp_path / "h.sqlite3"
    for port in (30000, 30001):
        recorder = Recorder(path, "gpu1", "fleet", port=port, log=f"/l/{port}.log")
        for _ in look(lines, Look(T0 - 1, T0 + 100, "fleet"), recorder):
            pass
    with HistoryStore(path) as store:
        rows = store.launches()
    assert len(rows) == 2 and rows[0]["start"] == rows[1]["start"]
    assert all(row["phases"] == rows[0]["phases"] for row in rows)


def test_phase_in_ready_counts_from_the_fired_up_line() -> None:
    """A server ready 70 s before the first look: ready began at the fired-up stamp, so every view that reads
    phase_since says over a minute in phase."""
    lines = the_log([[2, 3, 20, 1, 2, 6, 1, 8]])
    fired = lines[-1].t
    s = Readiness.of(log_watched=True, health_probed=True)
    for ev in [LogLook(end=900, mtime_s=fired, skew_s=0.0, last_t=fired), *(line.event for line in lines)]:
        s = reduce(s, ev, fired + 70)
    s = reduce(s, HealthResult("/health", "ok", status=200), fired + 70)
    s = reduce(s, LogLook(end=900, mtime_s=fired, skew_s=0.0, last_t=fired, live=True), fired + 70)
    assert s.phase is Phase.READY and s.phase_since == fired
    warmup = next(span for span in s.timeline if span.phase is Phase.WARMUP)
    assert warmup.ended_at == fired and warmup.end_t == fired


def test_schema_1_rows_are_read_and_their_attach_timed_phases_left_out(tmp_path: Path) -> None:
    """A file of the older sglang-tui: migrated in place (rows and ids kept); a phase it timed with no log stamp at
    one end (ready by the 200 at an attach) is left out of the medians, and the past says so once."""
    import sqlite3

    from tui.history.store import MIGRATIONS, SCHEMA_VERSION

    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0] + "; PRAGMA user_version = 1;")
    for i, (warmup_end, warmup) in enumerate((("2026-12-01 10:00:49", 8.0), (None, 44.0), (None, 51.0)), 1):
        db.execute(
            "INSERT INTO launches (id, key, key_json, host, start_mark, started_at, recorded_at, source, outcome,"
            " total_s) VALUES (?, 'k', '{}', 'gpu1', ?, ?, 0, 'wait', 'ready', ?)",
            (i, f"log 2026-12-0{i} 10:00:00", float(i), 41.0 + warmup),
        )
        db.executemany(
            'INSERT INTO phases (launch_id, idx, phase, model, start, "end", duration_s) VALUES (?,?,?,?,?,?,?)',
            [(i, 0, "loading_weights", "main", "2026-12-01 10:00:00", "2026-12-01 10:00:41", 41.0),
             (i, 1, "warmup", "main", "2026-12-01 10:00:41", warmup_end, warmup)],
        )  # fmt: skip
    db.commit()
    db.close()
    with HistoryStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        past = store.past("k")
        rows = store.launches()
    assert [row["id"] for row in rows] == [3, 2, 1] and all(row["seen_from"] is None for row in rows)
    assert len(rows[0]["phases"]) == 2  # the phases stay in the file: only the medians leave them out
    assert past.durations("warmup") == (8.0,) and past.median("loading_weights") == 41.0
    assert past.attach_timed == 2 and past.totals() == (49.0,)
    assert past.skipped_words() == (
        "left out of the ETA: 2 launches recorded by an older sglang-tui with phases timed by its look, not by the log"
    )


def test_history_says_late_beside_the_outcome(tmp_path: Path) -> None:
    from tui.commands.history import format_launches

    lines = the_log([[2, 3, 20, 1, 2, 6, 1, 8]])
    path = tmp_path / "h.sqlite3"
    run_looks(lines, [Look(lines[-1].t + 40, lines[-1].t + 45, "fleet")], False, path)
    with HistoryStore(path) as store:
        text = format_launches(store.launches())
    assert text.splitlines()[1].split()[4:6] == ["ready", "(late)"], text
