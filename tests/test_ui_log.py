"""Pilot tests of the log pane: follow / "+N new lines", search n/N, rank filter, wrap, copy, bounds, pause."""

from __future__ import annotations

from tests.helpers.ui_fakes import T0, FakeBatchSource, FakeClock, Step, log_bytes, make_app, play
from tui.core.events import LogActivity, LogReset
from tui.ui.panes.log_pane import LogStatus

SIZE = (160, 48)


def _lines(n: int, start: int = 0, rank: str = "TP0") -> list[str]:
    return [f"[2025-11-29 10:00:{(start + i) % 60:02d} {rank}] line {start + i}" for i in range(n)]


async def _feed(pilot: object, source: FakeBatchSource, clock: FakeClock, lines: list[str]) -> None:
    await play(pilot, source, clock, [Step(clock.t, [log_bytes(lines)])])


async def test_follows_at_the_bottom_and_counts_new_lines_when_scrolled_up() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await _feed(pilot, source, clock, _lines(200))
        view = app.log_pane.view
        assert view.following and view.visible_texts()[-1].endswith("line 199")
        await pilot.press("home")  # the log view has focus: scroll to the top
        await pilot.pause()
        assert not view.following
        top_before = view.visible_texts()[0]
        await _feed(pilot, source, clock, _lines(30, 200))
        assert view.pending == 30 and view.visible_texts()[0] == top_before  # did not jump
        status = str(app.log_pane.query_one(LogStatus).render())
        assert "+30 new lines" in status
        await pilot.press("f")
        await pilot.pause()
        assert view.following and view.pending == 0 and view.visible_texts()[-1].endswith("line 229")
        assert "following" in str(app.log_pane.query_one(LogStatus).render())
        await _feed(pilot, source, clock, _lines(5, 230))
        assert view.visible_texts()[-1].endswith("line 234")


async def test_search_finds_newest_match_then_n_and_shift_n_move() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        lines = _lines(300)
        for i in (40, 150, 260):
            lines[i] += " NCCL watchdog"
        await _feed(pilot, source, clock, lines)
        await pilot.press("slash")
        await pilot.press(*"nccl")
        await pilot.press("enter")
        await pilot.pause()
        view = app.log_pane.view
        assert view.selected_text() is not None and "line 260 NCCL" in view.selected_text()
        assert not view.following
        await pilot.press("N")
        assert "line 150 NCCL" in (view.selected_text() or "")
        await pilot.press("N")
        assert "line 40 NCCL" in (view.selected_text() or "")
        await pilot.press("n")
        assert "line 150 NCCL" in (view.selected_text() or "")
        assert any("line 150" in t for t in view.visible_texts())  # brought into view
        assert "2/3" in str(app.log_pane.query_one(LogStatus).render())  # issue 14: which match of how many
        await pilot.press("c")
        assert app.clipboard == view.selected_text()


async def test_rank_filter_cycles_through_ranks() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        mixed = [line for i in range(10) for line in (_lines(1, i, "TP0") + _lines(1, i, "TP1") + _lines(1, i, "TP10"))]
        await _feed(pilot, source, clock, mixed + ["Multi-thread loading shards:  50% Completed | 32/64"])
        view = app.log_pane.view
        await pilot.press("t")
        assert view.rank_filter == "TP0" and all(" TP0]" in t for t in view.visible_texts())
        await pilot.press("t")
        assert view.rank_filter == "TP1" and len(view.visible_texts()) == 10
        await pilot.press("t")
        assert view.rank_filter == "TP10"  # natural order: TP1 before TP10
        await pilot.press("t")
        assert view.rank_filter is None and view.virtual_size.height == 31


async def test_wrap_toggle_splits_long_lines_into_rows() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        long_line = "[2025-11-29 10:00:02] server_args=ServerArgs(" + "x" * 600 + ")"
        await _feed(pilot, source, clock, ["short", long_line, "after"])
        view = app.log_pane.view
        assert len(view.visible_texts()) == 3
        await pilot.press("w")
        await pilot.pause()
        rows = view.visible_texts()
        # each row fits the cells left of the scrollbar (issue 23: rows as wide as the pane lost 2 characters each)
        assert view.row_width == view.size.width - view.styles.scrollbar_size_vertical
        assert len(rows) > 3 and all(len(r) == view.row_width for r in rows[1:-2]) and rows[-1] == "after"
        assert "".join(rows[1:-1]) == long_line
        for y in range(1, len(rows) - 1):  # and what is drawn is the whole row
            assert view.render_line(y).text.rstrip() == rows[y].rstrip()
        await pilot.press("w")
        assert len(view.visible_texts()) == 3


async def test_errors_are_highlighted_and_copied_when_nothing_is_selected() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
        await _feed(pilot, source, clock, ["[2025-11-29 10:00:02 TP0] Load weight begin. avail mem=138.05 GB", oom])
        kinds = [line.kind for line in app.log_pane.view.lines]
        assert kinds[-1] == "error"
        await pilot.press("c")
        assert app.clipboard == oom  # the last line when no line is selected and the model has no error


async def test_a_flood_of_lines_stays_bounded_and_ends_on_the_newest() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    app = make_app(source, clock=clock, max_log_lines=5000)
    async with app.run_test(size=SIZE) as pilot:
        offset = 0
        for k in range(3):  # 30,000 lines in three batches
            event = log_bytes(_lines(10_000, k * 10_000), offset)
            offset = event.offset
            await play(pilot, source, clock, [Step(clock.t, [event])])
        view = app.log_pane.view
        assert view.total_received == 30_000
        assert view.line_count <= 5000 + 5000 // 10
        assert view.visible_texts()[-1].endswith("line 29999")
        assert app.state.log_offset == offset


async def test_pause_holds_the_display_and_resume_catches_up() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        first = log_bytes(_lines(3))
        await play(pilot, source, clock, [Step(T0, [first])])
        await pilot.press("p")
        await play(pilot, source, clock, [Step(T0, [log_bytes(_lines(3, 3), first.offset)])])
        assert app.log_pane.view.line_count == 3 and app.state.log_offset < app._live.log_offset
        await pilot.press("p")
        await pilot.pause()
        assert app.log_pane.view.line_count == 6 and app.state == app._live


async def test_a_log_reset_is_marked_in_the_pane() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(
            pilot,
            source,
            clock,
            [
                Step(
                    T0,
                    [
                        LogActivity(10, b"old line\npartial"),
                        LogReset("truncated", "size 3 < offset 10"),
                        LogActivity(4, b"new\n"),
                    ],
                )
            ],
        )
        texts = [line.text for line in app.log_pane.view.lines]
        assert texts[0] == "old line" and texts[1] == "partial"
        assert texts[2] == "──── log restarted (truncated): size 3 < offset 10 ────" and texts[3] == "new"


async def test_a_progress_bar_mid_flight_shows_as_a_live_last_line() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        frames = b"".join(
            f"Multi-thread loading shards:  {k}% Completed | {k}/64 [00:0{k}<00:10,  1.00it/s]\r".encode()
            for k in range(1, 4)
        )
        await play(pilot, source, clock, [Step(T0, [LogActivity(10, b"[2025-11-29 10:00:02] before\n" + frames)])])
        view = app.log_pane.view
        assert [line.text for line in view.lines] == ["[2025-11-29 10:00:02] before"]
        assert view.visible_texts()[-1].endswith("3/64 [00:03<00:10,  1.00it/s]")
        await play(pilot, source, clock, [Step(T0, [LogActivity(20, b"\n[2025-11-29 10:00:09] after\n")])])
        texts = [line.text for line in view.lines]
        assert texts[-2].endswith("3/64 [00:03<00:10,  1.00it/s]") and texts[-1].endswith("after")
        assert view.live is None and view.visible_texts()[-1].endswith("after")


async def test_the_tools_own_probe_lines_are_dimmed_and_h_hides_them() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        probe_access = '[2025-11-29 10:00:05] INFO:     127.0.0.1:40000 - "GET /health?from=sglang-tui HTTP/1.1" 200 OK'
        probe_prefill = (
            "[2025-11-29 10:00:04 TP0] Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, "
            "#running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: True, input throughput (token/s): 1.02"
        )
        user = '[2025-11-29 10:00:06] INFO:     10.0.0.7:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        other_probe = '[2025-11-29 10:00:07] INFO:     10.0.0.9:5000 - "GET /health HTTP/1.1" 200 OK'  # not ours
        await _feed(
            pilot, source, clock, ["[2025-11-29 10:00:03] fired up", probe_prefill, probe_access, user, other_probe]
        )
        view = app.log_pane.view
        assert [line.kind == "probe" for line in view.lines] == [False, True, True, False, False]
        dim = view.get_component_rich_style("log--probe", partial=True)
        assert dim.dim or dim.color is not None
        await pilot.press("h")
        assert view.visible_texts() == ["[2025-11-29 10:00:03] fired up", user, other_probe]
        assert "probes hidden" in str(app.query_one(LogStatus).render())
        await _feed(pilot, source, clock, [probe_access, "[2025-11-29 10:00:09] after"])
        assert view.visible_texts()[-2:] == [other_probe, "[2025-11-29 10:00:09] after"]
        await pilot.press("h")
        assert len(view.visible_texts()) == 7  # all five, the probe again, and "after"


async def test_severity_filter_cycles_and_combines_with_rank_and_search_filters() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        lines = _lines(20, 0, "TP0") + _lines(20, 0, "TP1")
        lines += [
            "[2025-11-29 10:01:00 TP0] WARNING: slow NCCL init",
            "[2025-11-29 10:01:01 TP1] WARNING: slow disk",
            "[2025-11-29 10:01:02 TP0] RuntimeError: CUDA out of memory",
            "[2025-11-29 10:01:03 TP1] RuntimeError: NCCL error",
        ]
        await _feed(pilot, source, clock, lines + ["Multi-thread loading shards:  50% Completed | 32/64"])
        view, pane = app.log_pane.view, app.log_pane
        await pilot.press("s")
        assert view.severity == "warning" and pane.border_title == "log · warnings and errors"
        assert len(view.visible_texts()) == 4  # the open progress line is not a warning either
        await pilot.press("s")
        assert view.severity == "error" and pane.border_title == "log · errors only"
        assert [t.split("] ")[1] for t in view.visible_texts()] == [
            "RuntimeError: CUDA out of memory",
            "RuntimeError: NCCL error",
        ]
        await pilot.press("t")  # rank TP0 and errors only
        assert view.rank_filter == "TP0" and view.visible_texts() == [
            "[2025-11-29 10:01:02 TP0] RuntimeError: CUDA out of memory"
        ]
        await pilot.press("t", "s")  # TP1, then all severities again: TP1's 22 lines
        assert view.severity is None and pane.border_title == "log" and len(view.visible_texts()) == 22
        await pilot.press("s")  # warnings and errors of every rank that match a search, shown alone
        await pilot.press("t")
        assert view.rank_filter is None
        await pilot.press("slash", *"nccl", "enter")
        await pilot.press("F")
        await pilot.pause()
        assert view.only_matches and sorted(t.split("] ")[1] for t in view.visible_texts()) == [
            "RuntimeError: NCCL error",
            "WARNING: slow NCCL init",
        ]
        await pilot.press("s", "s")
        assert view.severity is None and len(view.visible_texts()) == 2  # the search filter stays


def test_wrap_spans_join_back_to_the_line_in_cells_not_characters() -> None:
    from rich.cells import cell_len

    from tui.ui.panes.log_view import display_text
    from tui.ui.text import wrap_spans

    for text in [
        "accept len: 3.52, accept rate: 0.88, cuda graph: True, gen throughput (token/s): 1234.56",
        "模型加载完成: 权重 64/64 shards, 显存 138.05 GB 可用" * 3,  # wide characters: two cells each
        '\tFile "/sglang/srt/managers/scheduler.py", line 2375, in configure_scheduler_process\t(tab)',
        "bad\x1b[31m escape \x07 and \u202e bidi override" * 4,  # each shown as one mark
        "",
        "x" * 19,
    ]:
        for width in (1, 7, 19, 20, 76):
            spans = wrap_spans(text, width)
            assert "".join(text[a:b] for a, b in spans) == text
            assert all(a < b for a, b in spans) or text == ""
            for a, b in spans:  # every row fits, as drawn (a character wider than the row gets one of its own)
                assert cell_len(display_text(text[a:b])) <= width or b - a == 1
