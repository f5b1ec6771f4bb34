"""Issue 23 item 4: restart, terminate and kill are offered only when they can work, and their dialog says what will
really happen (pilot tests: the real app over a fake control)."""

from __future__ import annotations

from textual.widgets import Static

from tests.helpers.ui_fakes import FakeBatchSource, FakeClock, FakeControl, killed_run, make_app, play, startup_to_ready
from tui.core.events import ServerProcess
from tui.core.state import Readiness
from tui.ui.offers import Offer, offered, refusal, short_command, will
from tui.ui.panes.keybar import KeyBar
from tui.ui.screens.confirm import ConfirmScreen

SIZE = (120, 40)
ALL = {"restart-server": "restart", "terminate-server": "terminate", "kill-server": "kill"}


def _offer(alive: bool | None, relaunch: str | None = "python -m sglang.launch_server", **kw: bool) -> Offer:
    return Offer(read_only=kw.get("read_only", False), has_control=kw.get("has_control", True), relaunch=relaunch,
                 process_alive=alive, process_visible=kw.get("visible", True))  # fmt: skip


def test_what_is_offered_follows_the_launch_command_and_the_process_watch() -> None:
    assert offered(_offer(True)) == ALL
    assert offered(_offer(None)) == ALL  # not reported yet: the stop finds the server when it runs
    assert offered(_offer(False)) == {"restart-server": "start"}  # stopped: r starts it, nothing to stop
    assert offered(_offer(True, relaunch=None)) == {"terminate-server": "terminate", "kill-server": "kill"}
    assert offered(_offer(False, relaunch=None)) == {}
    assert offered(_offer(True, read_only=True)) == {} and offered(_offer(True, has_control=False)) == {}
    assert offered(_offer(None, visible=False)) == {"restart-server": "restart"}  # another uid's: cannot be stopped
    assert "restart needs --launch CMD" in (refusal("restart", _offer(True, relaunch=None)) or "")
    assert refusal("kill", _offer(False)) == "nothing to kill: no server process is running (r starts it again)"
    assert refusal("terminate", _offer(False, relaunch=None)) == "nothing to terminate: no server process is running"


def test_the_will_line_says_what_restart_really_does() -> None:
    assert will("restart", _offer(False)) == (
        "start it with --launch: python -m sglang.launch_server (none runs now: nothing to stop first)"
    )
    assert will("restart", _offer(True)).startswith("SIGTERM to its process group")
    long = "/opt/venvs/sglang/bin/python -m sglang.launch_server --model-path /models/Llama-3.3-70B-Instruct --tp 8"
    assert short_command(long) == "python -m sglang.launch_server --model-path /models/Llama-3.3-70B-Instruct --tp …"


async def test_the_footer_and_the_keys_after_the_server_is_gone() -> None:
    source, clock = FakeBatchSource(), FakeClock()
    control = FakeControl()
    app = make_app(source, control=control, clock=clock, monotonic=FakeClock(0.0))
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_ready())
        await play(pilot, source, clock, [step for step in killed_run()])
        bar = app.query_one(KeyBar)
        assert [(h.keys, h.word) for h in bar.shown if h.dangerous] == [("r", "start")]
        await pilot.press("K")
        assert not isinstance(app.screen, ConfirmScreen)  # nothing offered that cannot work
        await pilot.pause()
        assert any("nothing to kill" in n for n in app.notices)
        await pilot.press("r")
        assert isinstance(app.screen, ConfirmScreen) and app.screen.title_text == "Start the server?"
        summary = str(app.screen.query_one("#confirm-summary", Static).render())
        assert "server:  no process running" in summary
        assert f"will:    start it with --launch: {control.relaunch}" in summary
        await pilot.press("n")
        assert control.calls == []


async def test_restart_without_launch_is_not_offered_and_says_why() -> None:
    source, clock = FakeBatchSource(), FakeClock()
    control = FakeControl(relaunch=None)
    app = make_app(source, control=control, clock=clock, monotonic=FakeClock(0.0))
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_ready())
        await play(pilot, source, clock, [])
        source.push([ServerProcess(True, (4242,), "listener on port 30000")])
        await pilot.pause()
        assert [h.keys for h in app.query_one(KeyBar).shown if h.dangerous] == ["T", "K"]
        await pilot.press("r")
        assert not isinstance(app.screen, ConfirmScreen)
        await pilot.pause()
        assert any("restart needs --launch CMD" in n for n in app.notices)
        assert control.calls == []


def test_an_empty_state_offers_everything_a_control_can_do() -> None:
    assert offered(Offer.of(Readiness(), read_only=False, has_control=True, relaunch="x")) == ALL
