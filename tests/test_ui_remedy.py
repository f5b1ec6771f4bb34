"""The remedy where people look: the TUI's failure header, the report (`C`), and `r` offering "restart with this
change" with the exact new command in the dialog; yes starts the server with it from then on. A fake control
(named so, tests/helpers/ui_fakes.py) stands in for ServerControl; the state is the real replay of a failing log."""

from __future__ import annotations

import io

from tests.helpers.ui_fakes import FakeBatchSource, FakeClock, FakeControl, make_app, until
from tui.commands.replay import replay_stream
from tui.core.launchkey import start_mark
from tui.core.remedy import remedy
from tui.core.state import Phase, Readiness
from tui.ui.panes.header import HeaderPane
from tui.ui.report import markdown_report
from tui.ui.screens.confirm import ConfirmScreen

SIZE = (160, 48)
LAUNCH = FakeControl.relaunch
FAILED_CAPTURE = (
    "[2026-12-01 10:00:00] server_args=ServerArgs(model_path='/models/llama-70b', tp_size=8, port=30000, "
    "mem_fraction_static=0.88, cuda_graph_max_bs_decode=160)\n"
    "[2026-12-01 10:00:05 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=10.00 GB\n"
    "[2026-12-01 10:00:09 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "x.py", line 1, in capture\n'
    "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB.\n"
)
NEW = f"{LAUNCH} --cuda-graph-max-bs-decode 80 --mem-fraction-static 0.80"


def _failed(launch: str | None = LAUNCH) -> Readiness:
    state = replay_stream(io.BytesIO(FAILED_CAPTURE.encode()))
    assert state.phase is Phase.FAILED
    return state.evolve(launch_command=launch)


def test_the_report_says_the_remedy_its_source_and_the_new_command() -> None:
    text = markdown_report(_failed(), 0.0, "gpu-host")
    assert "### Remedy (sglang-tui's table of known causes: https://docs.sglang.io/" in text
    assert "- `--cuda-graph-max-bs-decode 80` (was 160)" in text and "- `--mem-fraction-static 0.80` (was 0.88)" in text
    assert NEW in text


async def test_the_header_shows_the_remedy_and_r_restarts_with_the_change() -> None:
    control = FakeControl()
    state = _failed()
    found = remedy(state)
    assert found is not None and found.command == NEW
    app = make_app(FakeBatchSource(), control=control, clock=FakeClock(), initial=state)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "REMEDY" in app.query_one(HeaderPane).shown, what="the header's remedy")
        header = app.query_one(HeaderPane).shown
        assert (
            "REMEDY  --cuda-graph-max-bs-decode 80 (was 160), --mem-fraction-static 0.80 (was 0.88) · CUDA graph"
            in header
        )
        assert "r restarts with it" in header  # --launch is known: the edited command is one key away
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the dialog")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.title_text == "Restart with this change?"
        assert f"command: {NEW}" in dialog.summary
        assert dialog.command is not None and dialog.command.endswith(f"setsid sh -c {NEW}")  # `c`: what runs …
        assert dialog.command.startswith(  # … after the difference of the two commands
            "# restart with this change (known cause)\n#   --cuda-graph-max-bs-decode: 160 -> 80\n"
            "#   --mem-fraction-static: 0.88 -> 0.80\n"
        )
        await pilot.press("y")
        await until(pilot, lambda: "restart" in control.calls, what="the restart")
        assert control.calls[-2:] == ["relaunch_with", "restart"] and control.relaunch == NEW
        assert app.state.launch_command == NEW  # a next failure's remedy edits the command that ran
        tried = app.state.tried_change  # what the history keeps with each launch after (tui/history/record.py)
        assert tried is not None and tried.cause == "oom" and tried.after == start_mark(state)
        assert tried.changes == (("--cuda-graph-max-bs-decode", "80", "160"), ("--mem-fraction-static", "0.80", "0.88"))


async def test_no_change_to_offer_keeps_the_plain_restart() -> None:
    control = FakeControl()
    app = make_app(FakeBatchSource(), control=control, clock=FakeClock(), initial=_failed(launch=None))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the dialog")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.title_text == "Restart the server?"
        assert not any(line.startswith("command:") for line in dialog.summary)
