"""Issue 23 items 3 and 10: a dialog opens under the header (the verdict stays in view), a notice that comes while it
is open is on the dialog's own message line and never a toast over its buttons, and toasts stack under the header."""

from __future__ import annotations

import pytest
from textual.widgets._toast import Toast, ToastRack

from tests.helpers.ui_fakes import FakeBatchSource, FakeClock, FakeControl, make_app, play, startup_to_loading
from tui.ui.panes.header import HeaderPane
from tui.ui.screens.confirm import ConfirmScreen
from tui.ui.screens.overlay import NoticeLine, Overlay

SIZES = [(80, 24), (120, 40), (200, 50)]
IDS = [f"{w}x{h}" for w, h in SIZES]


def _header_bottom(app) -> int:
    return app.screen_stack[0].query_one(HeaderPane).region.bottom


@pytest.mark.parametrize("size", SIZES, ids=IDS)
@pytest.mark.parametrize("key", ["question_mark", "P", "r", "K"])
async def test_every_dialog_opens_under_the_header(size: tuple[int, int], key: str) -> None:
    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock, monotonic=FakeClock(0.0))
    async with app.run_test(size=size) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        await pilot.press(key)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, Overlay)
        box = screen.query_one(screen.BOX)
        assert box.region.y >= _header_bottom(app) and box.region.bottom <= size[1], (box.region, size)
        if isinstance(screen, ConfirmScreen):
            await pilot.press("c")  # the exact commands shown: the buttons stay on screen
            await pilot.pause()
            yes = screen.query_one("#yes")
            assert yes.region.bottom <= size[1] and screen.query_one(screen.BOX).region.y >= _header_bottom(app)


async def test_a_notice_while_a_dialog_is_open_goes_to_its_message_line_not_over_its_buttons() -> None:
    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock, monotonic=FakeClock(0.0))
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        await pilot.press("r")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        line = dialog.query_one(NoticeLine)
        assert not line.display
        app.notify("py-spy is not installed on gpu-node-7", title="dump", severity="error", timeout=45)
        await pilot.pause()
        assert line.display and "dump: py-spy is not installed on gpu-node-7" in str(line.render())
        assert not any(t.display for t in dialog.query(Toast))  # no toast over Yes/No
        assert dialog.query_one("#no").region.bottom <= 24
        await pilot.press("n")
        await pilot.pause()
        await pilot.pause()
        toasts = list(app.screen.query(Toast))  # back on the main screen: the notice is a toast there
        assert toasts and "py-spy is not installed" in str(toasts[-1].render())


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_stacked_toasts_never_cover_the_header(size: tuple[int, int]) -> None:
    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock)
    async with app.run_test(size=size, notifications=True) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        count = size[1] // 4  # more than the rows under the header hold, at every size
        for i in range(count):
            app.notify(f"notice {i}: " + "a long line of words that wraps in the toast " * 3, timeout=30)
        rack = app.screen.query_one(ToastRack)
        for _ in range(50):  # until all are mounted and laid out
            await pilot.pause()
            if len(rack.query(Toast)) == count and any(t.region.height for t in rack.query(Toast)):
                break
        width, height = size
        on_top = {type(app.screen.get_widget_at(x, y)[0]) for y in range(height) for x in range(width // 2, width)}
        assert Toast in on_top  # they are shown (right half, bottom up) ...
        header = {type(app.screen.get_widget_at(x, y)[0]) for y in range(_header_bottom(app)) for x in range(width)}
        assert Toast not in header and HeaderPane in header  # ... and none over the header


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_a_failure_while_the_dialog_is_open_keeps_its_buttons_and_the_grown_header_in_view(
    size: tuple[int, int],
) -> None:
    from tests.helpers.ui_fakes import startup_failed_oom

    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock, monotonic=FakeClock(0.0))
    async with app.run_test(size=size, notifications=True) as pilot:
        steps = startup_failed_oom()
        await play(pilot, source, clock, steps[:-2])
        before = _header_bottom(app)
        await pilot.press("r")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        await play(pilot, source, clock, steps[-2:])  # the OOM line, then no process left: FAILED, its cause shown
        for _ in range(20):
            await pilot.pause()
        assert app.state.error is not None and _header_bottom(app) > before  # the header grew by the cause line
        line = dialog.query_one(NoticeLine)
        assert line.display and "the server failed" in str(line.render()) and line.region.height <= 2
        box = dialog.query_one(dialog.BOX)
        assert box.region.y >= _header_bottom(app) and dialog.query_one("#yes").region.bottom <= size[1]


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_the_newest_toast_is_in_view_when_the_stack_overflows(size: tuple[int, int]) -> None:
    """When the toasts are taller than the rows under the header, the oldest are dropped and the newest is shown (the
    tmux test's "nothing to kill" toast came under three older ones, below the screen's edge, and was never seen)."""
    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock)
    async with app.run_test(size=size, notifications=True) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        count = size[1] // 4
        for i in range(count):
            app.notify(f"notice {i}: " + "a long line of words that wraps in the toast " * 3, timeout=30)
        app.notify("the newest notice", timeout=30)
        rack = app.screen.query_one(ToastRack)

        def newest_in_view() -> Toast | None:
            toasts = list(rack.query(Toast))
            if not toasts or "the newest notice" not in str(toasts[-1].render()):
                return None
            region = toasts[-1].region
            return toasts[-1] if region.height and _header_bottom(app) <= region.y < region.bottom <= size[1] else None

        for _ in range(100):  # until the toasts are mounted, the old ones removed, and the rack laid out again
            await pilot.pause()
            if newest_in_view() is not None:
                break
        newest = newest_in_view()
        assert newest is not None, [t.region for t in rack.query(Toast)]
        assert app.screen.get_widget_at(newest.region.right - 2, newest.region.y + 1)[0] is newest
        kept = list(rack.query(Toast))
        assert 1 < len(kept) < count + 1  # older ones still shown; the ones that no longer fit dropped
        assert all(_header_bottom(app) <= t.region.y and t.region.bottom <= size[1] for t in kept)
