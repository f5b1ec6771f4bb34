"""The confirm dialog is as wide as what it says: a terminate of one server is a narrow box, with its PIDs said
whole ("pid 4242 and 7 more", never a cut "4242…"); `c` widens it for the exact commands."""

from __future__ import annotations

from textual.app import App

from tui.core.state import Readiness
from tui.ui.screens.confirm import BOX_WIDE, ConfirmScreen, summary_lines


def test_the_pids_are_said_whole() -> None:
    state = Readiness().evolve(process_pids=tuple(range(4242, 4250)))
    server = summary_lines("gpu1", state, "TERM the server's processes")[1]
    assert server == "server:  8 processes (pid 4242 and 7 more)"


async def test_the_box_fits_its_summary_and_widens_for_the_commands() -> None:
    summary = summary_lines("gpu1", Readiness().evolve(process_pids=(4242,)), "TERM, then KILL after 30 s")
    app: App[None] = App()
    async with app.run_test(size=(160, 40)) as pilot:
        dialog = ConfirmScreen("terminate the server on gpu1?", "gpu1", "kill -TERM -- -4242\n" * 3, summary)
        app.push_screen(dialog)
        await pilot.pause()
        box = dialog.query_one("#confirm-box")
        assert box.outer_size.width < 70, box.outer_size  # not a wide empty box
        await pilot.press("c")
        await pilot.pause()
        assert box.outer_size.width == BOX_WIDE
