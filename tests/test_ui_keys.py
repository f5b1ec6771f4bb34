"""Issue 23 items 8 and 10: the keys fingers expect (ctrl+c and ctrl+q quit, j/k/g/G in the log), `e` on a failure
lands on the line the verdict names, a filter that leaves nothing says so, and `b` says a phase in words."""

from __future__ import annotations

import pytest

from tests.helpers.ui_fakes import (
    OOM_LINE,
    T0,
    FakeBatchSource,
    FakeClock,
    FakeControl,
    Step,
    log_bytes,
    make_app,
    play,
    startup_failed_oom,
    startup_to_loading,
)
from tui.ui.actions import DEMO_QUIT_WORDS, QUIT_WORDS
from tui.ui.app import SglangTui, UiSources
from tui.ui.screens.help import HelpScreen

SIZE = (120, 40)


@pytest.mark.parametrize("key", ["q", "ctrl+q", "ctrl+c"])
async def test_q_ctrl_q_and_ctrl_c_quit(key: str) -> None:
    app = make_app(FakeBatchSource(), control=FakeControl())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
    assert app.return_code == 0 and not app.is_running


async def test_j_k_g_and_shift_g_move_the_log() -> None:
    source, clock = FakeBatchSource(), FakeClock(T0)
    app = make_app(source, clock=clock)
    lines = [f"[2025-11-29 10:00:{i % 60:02d} TP0] line {i}" for i in range(300)]
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, [Step(clock.t, [log_bytes(lines)])])
        view = app.log_pane.view
        assert view.following and view.visible_texts()[-1].endswith("line 299")
        await pilot.press("g")
        assert view.visible_texts()[0].endswith("line 0") and not view.following
        await pilot.press("j", "j", "j")
        assert view.visible_texts()[0].endswith("line 3")
        await pilot.press("k")
        assert view.visible_texts()[0].endswith("line 2")
        await pilot.press("G")
        assert view.following and view.visible_texts()[-1].endswith("line 299")


async def test_e_on_a_failure_lands_first_on_the_line_the_verdict_names() -> None:
    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        steps = startup_failed_oom()
        sigquit = "[2025-11-29 10:00:53] Received sigquit from a child process. It usually means the child failed."
        steps.append(Step(T0 + 53, [log_bytes([sigquit], 1 << 20)]))  # the noise after the cause, as SGLang prints
        await play(pilot, source, clock, steps)
        assert app.log_pane.view.lines[-1].text == sigquit and app.state.error is not None
        await pilot.press("e")
        assert app.log_pane.view.selected_text() == OOM_LINE
        await pilot.press("e")  # then e goes on to the next error or warning line from there
        assert app.log_pane.view.selected_text() != OOM_LINE


async def test_a_filter_that_leaves_nothing_says_so() -> None:
    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        view = app.log_pane.view
        assert view.empty_note() is None
        await pilot.press("s", "s")  # errors only: a loading server has none
        assert view.severity == "error" and view.shown_rows == 0
        assert view.empty_note() == f"no error line among the {view.line_count} lines kept"
        assert app.notices[-1] == f"log: errors only (none of the {view.line_count} lines kept; s: next)"
        assert view.render_line(0).text.startswith("no error line among")  # drawn in the pane, not left empty
        await pilot.press("s")
        assert view.empty_note() is None and view.shown_rows > 0


async def test_b_while_loading_says_the_phase_in_words() -> None:
    source, clock = FakeBatchSource(), FakeClock()
    sources = UiSources(batches=source.batches, host_label="gpu-node-7", port=30000, bench=lambda: None)  # type: ignore[arg-type,return-value]
    app = SglangTui(sources, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        await pilot.press("b")
        assert app.notices[-1] == "bench: the server is not ready yet (loading weights)"


@pytest.mark.parametrize("words", [QUIT_WORDS, DEMO_QUIT_WORDS])
async def test_help_says_what_q_does_to_the_server(words: str) -> None:
    source = FakeBatchSource()
    sources = UiSources(batches=source.batches, host_label="local demo :30000", quit_words=words)
    app = SglangTui(sources, clock=FakeClock())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = " ".join(app.screen.shown.split())
        assert f"q / ctrl+q / ctrl+c {words}" in shown
