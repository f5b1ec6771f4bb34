"""The responsive layout: at every size from 80×24 up the verdict, the bars with their ETA, every rank (or a
"+N") and the dangerous keys stay on screen; panes fold before anything is clipped."""

from __future__ import annotations

import pytest

from tests.helpers.ui_fakes import FakeBatchSource, FakeClock, FakeControl, make_app, play, startup_to_loading
from tui.ui.panes.keybar import KeyBar, fit, hints

SIZES = [(80, 24), (100, 30), (120, 40), (160, 45), (200, 50)]


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_every_size_keeps_verdict_eta_ranks_and_dangerous_keys(size: tuple[int, int]) -> None:
    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock)
    async with app.run_test(size=size) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        await pilot.pause()
        text = screen_text(app)
        assert "LOADING WEIGHTS" in text
        assert "57/64" in text and "ETA" in text
        # every rank: named in a cell or a grouped range ("TP0–7"), or a "+N" pointing to them
        assert all(f"TP{i} " in text for i in range(8)) or "TP0–7" in text or "+" in text
        footer = app.query_one(KeyBar)
        keys = [h.keys for h in footer.shown]
        assert {"r", "T", "K"} <= set(keys), keys
        bottom = text.splitlines()[-1]
        assert " r restart" in bottom and " T terminate" in bottom and " K kill" in bottom
        # nothing runs off the screen: the screen itself never scrolls
        assert app.screen.max_scroll_y == 0


async def test_80x24_names_all_eight_ranks_on_one_line_and_counts_hidden_gpus() -> None:
    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        await pilot.pause()
        text = screen_text(app)
        assert "ranks   TP0–7 load…" in text
        gpus_rows = [line for line in text.splitlines() if "sglang::scheduler" in line]
        hidden = 8 - len(gpus_rows)
        assert hidden == 0 or f"+{hidden} more" in text


async def test_ranks_at_different_milestones_are_grouped_by_neighbours() -> None:
    from tui.core.state import RankState
    from tui.ui.panes.shards import rank_groups

    ranks = tuple(RankState(f"TP{i}", "load_end" if i < 6 else "load_begin") for i in range(8))
    assert rank_groups(ranks) == [("TP0–5", "load✓"), ("TP6–7", "load…")]
    assert rank_groups((RankState("DP0 TP1", "kv_alloc"), RankState("DP1 TP0", "kv_alloc"))) == [
        ("DP0 TP1", "kv…"),
        ("DP1 TP0", "kv…"),
    ]


def test_footer_drops_the_least_important_keys_first_and_never_the_dangerous_ones() -> None:
    all_three = {"restart-server": "restart", "terminate-server": "terminate", "kill-server": "kill"}
    entries = hints(offered=all_three, focused="log", searching=True, width=72)
    kept = fit(entries, 72)
    assert [e.keys for e in kept if e.dangerous] == ["r", "T", "K"]
    assert "n/N" in [e.keys for e in kept]  # a search is on: its keys come before the rest
    assert "w" not in [e.keys for e in kept]
    assert kept[0].keys == "q/^q"  # ctrl+q is listed with q (issue 23)
    wide = fit(hints(offered=all_three, focused="log", searching=False, width=200), 200)
    assert {"1-4", "w", "p", "e/E"} <= {e.keys for e in wide}
    read_only = fit(hints(offered={}, focused="log", searching=False, width=200), 200)
    assert not any(e.dangerous for e in read_only)


def test_user_facing_words_for_phases_and_error_kinds() -> None:
    from tui.core.state import ErrorInfo, Phase
    from tui.ui.labels import error_badge, kind_words, phase_words

    assert phase_words(Phase.LOADING_WEIGHTS) == "loading weights"
    assert [kind_words(k) for k in ("oom", "nccl", "port_in_use")] == ["out of memory", "NCCL", "port in use"]
    assert error_badge(ErrorInfo("other", "something broke"))[0] == " ✗ FAILED "  # never "✗ OTHER"
    assert error_badge(ErrorInfo("port_in_use", "Errno 98"))[0] == " ✗ PORT IN USE "


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
async def test_help_fits_lists_every_key_and_filters(size: tuple[int, int]) -> None:
    from textual.containers import VerticalScroll

    from tui.ui.actions import visible_actions
    from tui.ui.panes.header import HeaderPane
    from tui.ui.screens.help import HelpScreen, key_rows

    app = make_app(FakeBatchSource(), control=FakeControl())
    async with app.run_test(size=size) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.pause()
        text = screen_text(app)
        rows = key_rows(False)
        assert {k for k, _, _ in rows} >= {"r", "T", "K", "n N", "e E", "1 2 3 4"}
        assert len(rows) < len(visible_actions(False))  # n/N, e/E and 1-4 share rows
        box = app.screen.query_one(VerticalScroll)
        assert box.region.y >= app.screen_stack[0].query_one(HeaderPane).region.bottom  # the verdict stays in view
        assert "…" not in app.screen.shown  # nothing cut: the words wrap
        if size == (80, 24):  # one column: every key's whole words, on screen or a scroll away (it scrolls)
            shown = " ".join(app.screen.shown.split())
            for _keys, words, _ in rows:
                assert " ".join(words.split()) in shown, words
        else:  # two columns, all of it on screen at once, and the legend too
            for _keys, words, _ in rows:
                assert words[:30] in text, words
            assert "legend" in text and "■" in text
        await pilot.press("slash", "k", "i", "l", "l")
        await pilot.pause()
        shown = app.screen.shown
        assert "Kill the server" in shown and "Follow the log" not in shown
        await pilot.press("escape")  # clears the filter first
        assert isinstance(app.screen, HelpScreen) and "Follow the log" in app.screen.shown
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_search_counts_takes_a_regex_filters_and_esc_clears() -> None:
    from tests.helpers.ui_fakes import log_bytes
    from tui.ui.panes.log_pane import LogStatus

    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock)
    lines = [
        f"[2025-11-29 10:00:0{i % 10} TP{i % 2}] line {i} {'WARNING low mem' if i % 4 == 0 else 'ok'}"
        for i in range(12)
    ]
    async with app.run_test(size=(120, 40)) as pilot:
        from tests.helpers.ui_fakes import Step

        await play(pilot, source, clock, [Step(clock.t, [log_bytes(lines)])])
        await pilot.press("slash", *"warn.*mem", "enter")
        await pilot.pause()
        view = app.log_pane.view
        assert view.match_position() == (3, 3)  # found from the end: the last of three
        status = str(app.log_pane.query_one(LogStatus).render())
        assert "3/3" in status
        await pilot.press("n")
        assert view.match_position()[0] == 1
        await pilot.press("F")
        await pilot.pause()
        assert all("WARNING" in t for t in view.visible_texts() if t)
        await pilot.press("escape")
        await pilot.pause()
        assert view.search_term is None and not view.only_matches
        assert sum(1 for t in view.visible_texts() if t.startswith("[")) == 12
        await pilot.press("e")
        assert view.selected_text() is not None and "WARNING" in view.selected_text()


async def test_once_ready_the_clock_texts_can_step_every_few_ticks() -> None:
    """The real TUI (watch) steps ages every READY_CLOCK_TICKS once up: the idle screen repaints less."""
    from tests.helpers.ui_fakes import Step, startup_to_ready
    from tui.core.events import Tick
    from tui.ui.panes.header import HeaderPane

    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, clock=clock, ready_clock_ticks=5)
    async with app.run_test(size=(160, 45)) as pilot:
        await play(pilot, source, clock, startup_to_ready())
        await play(pilot, source, clock, [Step(clock.t + 5.0, [Tick()])])
        t, before = clock.t, app.query_one(HeaderPane).shown
        await play(pilot, source, clock, [Step(t + 1.2, [Tick()]), Step(t + 3.0, [Tick()])])
        assert app.query_one(HeaderPane).shown == before
        await play(pilot, source, clock, [Step(t + 4.6, [Tick()])])
        assert app.query_one(HeaderPane).shown != before
