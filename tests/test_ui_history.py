"""The TUI with the launch history: the real app, the real Recorder on a real SQLite file as its state hook.
The header shows the ETA to ready and the spread of the earlier launches; the timeline the usual durations."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.ui_fakes import HOST, FakeBatchSource, FakeClock, make_app, play, startup_to_loading
from tui.core.events import ServerArgs
from tui.core.fold import Fold
from tui.core.launchkey import key_fields, launch_key
from tui.core.readiness import reduce
from tui.core.state import Readiness
from tui.history.recorder import Recorder
from tui.history.store import HistoryStore, LaunchRecord
from tui.ui.panes.header import HeaderPane
from tui.ui.panes.timeline import TimelinePane

SIZE = (200, 48)
PHASES = (("starting", 6.0), ("init", 3.0), ("loading_weights", 500.0), ("kv_cache", 2.0), ("cuda_graph", 60.0),
          ("warmup", 10.0))  # fmt: skip


def seed_history(path: Path) -> None:
    """Two earlier ready launches of the key the fake startup will show."""
    first = next(e for e in startup_to_loading(1)[1].events if isinstance(e, ServerArgs))  # parsed from the log
    assert isinstance(first, ServerArgs)
    server = reduce(Readiness(), first, 0.0).server
    key = launch_key(server, HOST)
    assert key is not None
    with HistoryStore(path) as store:
        for i, scale in enumerate((1.0, 1.04)):
            store.record_launch(LaunchRecord(
                key=key, key_fields=key_fields(server, HOST), start_mark=f"log earlier {i}", source="tui",
                outcome="ready", started_at=float(i), total_s=sum(d for _, d in PHASES) * scale, shards=64,
                phases=tuple((p, "main", None, None, d * scale) for p, d in PHASES),
            ))  # fmt: skip


async def test_header_shows_ready_in_and_the_last_launches(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    seed_history(path)
    recorder = Recorder(path, HOST, "tui")
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    app.sources.fold = Fold(steps=(recorder.step,))
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_loading(16))
        header = app.query_one(HeaderPane).shown
        assert "ready in ~" in header and "last 2 launches 9m41s–10m04s" in header, header
        timeline = app.query_one(TimelinePane).shown
        assert "~1m01s" in timeline  # capture's usual duration (median of 60 s and 62.4 s), not reached yet
        state = app._live
    assert state.past is not None and state.past.count == 2
    recorder.finish(state)  # quit mid-launch: recorded as unfinished
    with HistoryStore(path) as store:
        assert [r["outcome"] for r in store.launches()][0] == "unfinished"


async def test_at_80x24_the_header_keeps_the_history_eta_in_view(tmp_path: Path) -> None:
    """A short terminal is a narrow one: the ETA and the last launches come right after the phase, within the 80
    columns (the README's own 80×24 picture had `· ready in ~21s · last 2 laun…`)."""
    path = tmp_path / "history.sqlite3"
    seed_history(path)
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    app.sources.fold = Fold(steps=(Recorder(path, HOST, "tui").step,))
    async with app.run_test(size=(80, 24)) as pilot:
        await play(pilot, source, clock, startup_to_loading(16))
        line = next(x for x in app.query_one(HeaderPane).shown.splitlines() if "in phase" in x)
        assert "ready in ~" in line[:78] and "last 2 launches 9m41s–10m04s" in line[:78], line
