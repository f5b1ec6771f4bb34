"""Pilot tests of the panes: scripted event batches from a fake source, folded by the real reducer."""

from __future__ import annotations

from collections.abc import Callable

from textual.notifications import Notify

from tests.helpers.ui_fakes import (
    HOST,
    OOM_LINE,
    T0,
    BrokenSource,
    FakeBatchSource,
    FakeClock,
    HangingSource,
    Step,
    gpus,
    make_app,
    play,
    startup_disconnected,
    startup_failed_oom,
    startup_stalled,
    startup_to_capture,
    startup_to_loading,
    startup_to_ready,
    until,
)
from tui.core.events import ConnectionState, GpuSnapshot, HealthResult, Tick
from tui.core.state import Phase, Readiness
from tui.ui.messages import EventsReceived
from tui.ui.panes.gpus import GpuPane
from tui.ui.panes.header import HeaderPane
from tui.ui.panes.health import HealthPane
from tui.ui.panes.shards import ShardsPane
from tui.ui.panes.timeline import TimelinePane

SIZE = (160, 48)


def _notes(seen: list[object]) -> list[str]:
    return [f"{m.notification.title}: {m.notification.message}" for m in seen if isinstance(m, Notify)]


async def test_loading_shows_shards_rate_eta_ranks_and_eight_gpus() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        shards = app.query_one(ShardsPane).shown
        assert "57/64" in shards and "7.1 shards/s" in shards and "ETA" in shards
        assert "TP7" in shards and "load…" in shards  # per-rank milestones at a glance
        header = app.query_one(HeaderPane).shown
        assert "LOADING WEIGHTS" in header and HOST in header and "TP8" in header and "EAGLE3" in header
        assert "log says: not ready" in header and "health says: refused" in header
        table = app.query_one(GpuPane)
        assert table.row_count == 8
        row = table.get_row("gpu3")
        assert row[1].plain == "TP3" and "4303 sglang::scheduler_TP3" in row[5].plain
        assert "16.2 / 133.9" in row[3].plain
        timeline = app.query_one(TimelinePane).shown
        assert "▶" in timeline and "loading weights" in timeline and "ETA" in timeline


async def test_gpu_pane_shows_any_number_of_gpus_and_updates_in_place() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, [Step(T0, [ConnectionState("connected"), gpus(1.0, n=2)])])
        table = app.query_one(GpuPane)
        assert table.row_count == 2
        await play(pilot, source, clock, [Step(T0 + 1, [gpus(2.0, n=16)])])
        assert table.row_count == 16 and "2.0 / 133.9" in table.get_row("gpu15")[3].plain
        updates: list[object] = []
        original = table.update_cell
        table.update_cell = lambda *a, **k: (updates.append(a), original(*a, **k))  # type: ignore[method-assign, assignment]
        await play(pilot, source, clock, [Step(T0 + 1, [gpus([2.0] * 15 + [9.0], n=16)])])
        changed = {(str(a[0]), str(a[1])) for a in updates}
        # only the GPU whose memory moved gets new figures; the others only grow their history sparkline
        assert {row for row, column in changed if column != "history"} == {"gpu15"}, changed
        assert ("gpu15", "used / total GiB") in changed and table.row_count == 16


async def test_timeline_and_header_tick_with_the_clock() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_loading(10))
        before = app.query_one(TimelinePane).shown
        await play(pilot, source, clock, [Step(clock.t + 65, [Tick()])])
        after = app.query_one(TimelinePane).shown
        assert before != after and "1m" in after.split("loading weights")[1].splitlines()[0]
        assert "in phase" in app.query_one(HeaderPane).shown


async def test_a_pane_does_not_redraw_when_its_slice_did_not_change() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        shards = app.query_one(ShardsPane)
        health = app.query_one(HealthPane)
        drawn: list[str] = []
        shards.update = lambda content="", **kw: drawn.append("shards")  # type: ignore[method-assign]
        original = health.update
        health.update = lambda content="", **kw: (drawn.append("health"), original(content, **kw))  # type: ignore[method-assign,assignment]
        await play(pilot, source, clock, [Step(clock.t, [HealthResult("/health", "starting", 503, 0.01)])])
        assert drawn == ["health"]


async def test_capture_shows_batches_with_batch_size() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_capture(12, 36))
        shards = app.query_one(ShardsPane).shown
        assert "64/64" in shards and "12/36" in shards and "batches/s" in shards
        assert "CUDA GRAPH CAPTURE" in app.query_one(HeaderPane).shown


async def test_ready_shows_both_facts_decode_figures_and_rings_once() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    seen: list[object] = []
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await play(pilot, source, clock, startup_to_ready())
        assert app.state.phase in (Phase.READY, Phase.SERVING)
        header = app.query_one(HeaderPane).shown
        assert "log says: fired up" in header and "health says: ok 200" in header
        health = app.query_one(HealthPane).shown
        assert "/health" in health and "ok 200" in health and "1210 ms" in health
        assert "tok/s" in health and "accept" in health
        assert any(ch in health for ch in "▁▂▃▄▅▆▇█")  # the decode sparkline
        assert bells == [1]
        assert any("ready" in note for note in _notes(seen))


async def test_failed_shows_the_oom_line_and_rings() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    seen: list[object] = []
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await play(pilot, source, clock, startup_failed_oom())
        header = app.query_one(HeaderPane).shown
        # issue 14: the kind in words ("out of memory", not "OOM"), and the phase it failed in named
        assert "FAILED" in header and "OUT OF MEMORY" in header and OOM_LINE in header
        assert "failed in CUDA graph capture (out of memory)" in header
        timeline = app.query_one(TimelinePane).shown.splitlines()
        assert any(line.startswith("✗") and "CUDA graph capture" in line for line in timeline)  # not a green ✓
        assert not any(line.startswith("✓") and "CUDA graph capture" in line for line in timeline)
        assert "process: gone" in header
        graphs = next(line for line in app.query_one(ShardsPane).shown.splitlines() if line.startswith("graphs"))
        assert (
            "20/36" in graphs and "failed" in graphs and "ETA" not in graphs and "/s" not in graphs
        )  # no false promise
        assert bells == [1]
        assert any("failed" in note and "CUDA out of memory" in note for note in _notes(seen))


async def test_at_80x24_the_failure_toast_is_short_and_brief() -> None:
    """The OOM toast at 80×24 would cover half of the 4-line log pane for 30 s: there it is one short line for 5 s
    (the header and the log have the cause whole); at a big terminal it stays 30 s."""
    for size, most_chars, timeout in (((80, 24), 60, 5.0), (SIZE, 140, 30.0)):
        clock, source = FakeClock(), FakeBatchSource()
        app = make_app(source, clock=clock)
        seen: list[object] = []
        async with app.run_test(size=size, message_hook=seen.append) as pilot:
            await play(pilot, source, clock, startup_failed_oom())
            failed = [
                m.notification for m in seen if isinstance(m, Notify) and "failed" in (m.notification.title or "")
            ]
            assert len(failed) == 1 and failed[0].timeout == timeout and len(failed[0].message) <= most_chars, failed


async def test_stalled_is_shown_and_announced() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock, initial=Readiness.of(stall_after=120.0))
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    seen: list[object] = []
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await play(pilot, source, clock, startup_stalled())
        header = app.query_one(HeaderPane).shown
        assert "STALLED in LOADING WEIGHTS" in header and "no progress for" in header
        assert bells == [1] and any("stalled" in note for note in _notes(seen))


async def test_disconnected_marks_gpu_data_stale() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_disconnected())
        header = app.query_one(HeaderPane).shown
        assert "reconnecting" in header and "keepalive timeout" in header and "stale" in header
        table = app.query_one(GpuPane)
        assert "STALE" in str(table.border_title)
        assert table.row_count == 8 and "16.2" in table.get_row("gpu0")[3].plain  # kept, not blanked


async def test_a_probe_that_never_read_a_gpu_is_not_stale() -> None:
    """No driver: the probe's one answer is its error; 11 s later the pane says there never was a sample (no
    "STALE: last sample 11 s ago" for a sample that never was)."""
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        no_driver = GpuSnapshot("none", error="NVML Shared Library Not Found; no nvidia-smi")
        await play(pilot, source, clock, [Step(1.0, [ConnectionState("connected"), no_driver]), Step(12.0, [Tick()])])
        title = str(app.query_one(GpuPane).border_title)
        assert "never a GPU sample" in title and "STALE" not in title, title


async def test_a_dead_source_becomes_state_not_a_crash() -> None:
    clock = FakeClock()
    source = BrokenSource([ConnectionState("connected")])
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.connection == "failed", what="the failed connection")
        assert app.state.connection == "failed" and "ssh channel closed" in app.state.connection_detail
        assert "failed" in app.query_one(HeaderPane).shown
        await pilot.press("question_mark")  # still alive and answering keys
        assert app.screen.__class__.__name__ == "HelpScreen"


async def test_keys_answer_while_the_source_hangs() -> None:
    source = HangingSource()
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        await source.entered.wait()
        await pilot.press("question_mark")
        assert app.screen.__class__.__name__ == "HelpScreen"
        await pilot.press("escape", "w")
        assert app.log_pane.view.wrap is True
        await pilot.press("p")
        assert app.paused is True
        assert "PAUSED" in app.query_one(HeaderPane).shown


async def settle(pilot: object, source: FakeBatchSource, clock: FakeClock) -> None:
    """One Tick at the last step's clock. The app's own tick timer runs in real time: on a loaded machine it fires
    between the steps, at whatever the fake clock read then, and the first Tick after the last step can still move
    a fact (a freshness window judged at an earlier clock). Settled here, before a test counts redraws."""
    await play(pilot, source, clock, [Step(clock.t, [Tick()])])


async def test_batches_within_a_tick_leave_the_clock_texts_alone_and_the_next_tick_moves_them() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_ready())
        await settle(pilot, source, clock)
        drawn: list[str] = []

        def spy(original: Callable[..., object], name: str) -> Callable[..., object]:
            return lambda content="", **kw: (drawn.append(name), original(content, **kw))

        for pane in (app.query_one(HeaderPane), app.query_one(HealthPane)):
            pane.update = spy(pane.update, type(pane).__name__)  # type: ignore[method-assign,assignment]
        t = clock.t
        before = app.query_one(HeaderPane).shown
        await play(pilot, source, clock, [Step(t + 0.3, [Tick()]), Step(t + 0.6, [Tick()])])
        assert drawn == [] and app.query_one(HeaderPane).shown == before  # ages at 0.1 s would have redrawn both, twice
        await play(pilot, source, clock, [Step(t + 1.2, [Tick()])])
        assert "HeaderPane" in drawn and "HealthPane" in drawn  # "N s ago" and time in phase still tick
        assert app.query_one(HeaderPane).shown != before


async def test_a_batch_with_no_new_fact_within_a_tick_is_not_handed_to_the_panes_and_a_new_gpu_reading_is() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_ready())
        await settle(pilot, source, clock)
        header = app.query_one(HeaderPane)
        drawn: list[float] = []
        original = header.draw
        header.draw = lambda state, now: (drawn.append(now), original(state, now))[1]  # type: ignore[method-assign]
        t = clock.t
        await play(pilot, source, clock, [Step(t + 0.2, [Tick()]), Step(t + 0.4, [Tick()])])
        assert drawn == []  # the reducer stamped a new time, and that is all: no pane looked at it
        await play(pilot, source, clock, [Step(t + 0.6, [gpus(99.0)])])
        assert drawn  # a new fact within the tick: handed on at once
        row = app.query_one(GpuPane).get_row("gpu0")
        assert any("99.0" in str(cell) for cell in row), row


async def test_a_column_that_narrowed_and_grew_back_is_drawn_at_its_full_width() -> None:
    """After a restart the "held by" cells go empty, then fill again. DataTable measures widths when idle and kept
    the lines it drew before that at the narrow width (textual#3533): `4300 s…` until the next sample."""
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, [Step(T0, [ConnectionState("connected"), gpus(16.0)])])
        await play(pilot, source, clock, [Step(T0 + 1, [gpus(0.0, alive=False)])])  # measured narrow
        table = app.query_one(GpuPane)

        def drawn() -> list[str]:
            return ["".join(segment.text for segment in table.render_line(y)) for y in range(table.size.height)]

        # The new processes' batch folded, and the screen drawn before the table's idle pass measured the cells:
        # the order a refresh can take; called here in one go so that it is that order every time.
        clock.t = T0 + 2
        app.on_events_received(EventsReceived((gpus(0.5),)))
        assert any("4300 s…" in line for line in drawn())  # the moment the bug lived in
        await pilot.pause()
        assert any("4300 sglang::scheduler_TP0" in line for line in drawn()), drawn()


async def test_rank_tags_without_a_stated_size_show_a_lower_bound() -> None:
    """No line states the TP size and sixteen ranks print: the header says TP≥16, the evidence which ranks, never TP16."""
    from tests.helpers.ui_fakes import at
    from tui.core.logparse import LogParser

    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    lines = "".join(f"[{at(1)[0]} TP{i}] Load weight begin. avail mem=70.00 GB\n" for i in range(16)).encode()
    parser = LogParser()
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, [Step(T0 + 2, parser.feed(lines) + parser.flush())])
        header = app.query_one(HeaderPane).shown
        assert "TP≥16" in header and "TP16" not in header
        assert "tp ≥ 16: ranks TP0–TP15 seen" in header  # the evidence line: which ranks the bound rests on
        assert app.state.server.tp_size is None
