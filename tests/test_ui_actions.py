"""Pilot tests of the actions: confirm dialog (host + exact command, No focused), y/n/escape, read-only, debounce."""

from __future__ import annotations

import subprocess
import sys

from textual.widgets import Button, Label, Static

from tests.helpers.processes import Spawner
from tests.helpers.ui_fakes import HOST, FakeBatchSource, FakeClock, FakeControl, make_app, until
from tui.core.events import ControlResult
from tui.ui.actions import ACTIONS, key_table_markdown
from tui.ui.panes.header import HeaderPane
from tui.ui.panes.health import HealthPane
from tui.ui.screens.confirm import ConfirmScreen
from tui.ui.screens.help import HelpScreen

SIZE = (160, 48)


def _dialog_text(app: object) -> str:
    screen = app.screen  # type: ignore[attr-defined]
    parts = [str(w.render()) for w in screen.query(Label)] + [str(w.render()) for w in screen.query(Static)]
    return "\n".join(parts)


async def _wait_for_result(pilot: object) -> None:
    """Until a ControlFinished was folded (never wait_for_complete: the monitor worker runs forever)."""
    app = pilot.app  # type: ignore[attr-defined]
    await until(pilot, lambda: app.control_results, what="a control result")
    await pilot.pause()  # type: ignore[attr-defined]


async def test_kill_asks_with_host_and_exact_command_and_no_focused() -> None:
    control = FakeControl()
    app = make_app(FakeBatchSource(), control=control, monotonic=FakeClock(0.0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("K")
        assert isinstance(app.screen, ConfirmScreen)
        text = _dialog_text(app)
        assert HOST in text and control.describe("kill") in text
        focused = app.focused
        assert isinstance(focused, Button) and focused.id == "no"
        await pilot.press("n")
        assert not isinstance(app.screen, ConfirmScreen)
        await pilot.pause()
        assert control.calls == []


async def test_escape_and_enter_on_no_cancel() -> None:
    control = FakeControl()
    clock = FakeClock(0.0)
    app = make_app(FakeBatchSource(), control=control, monotonic=clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("T")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, ConfirmScreen)
        clock.t += 1.0
        await pilot.press("r")
        assert isinstance(app.screen, ConfirmScreen)
        assert app.screen.command == control.describe("restart")
        await pilot.press("enter")  # enter presses the focused button: No
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert control.calls == []


async def test_yes_runs_the_action_once_and_shows_what_the_host_reported() -> None:
    result = ControlResult("kill", ok=True, command="kill -KILL -- -4242", survivors=(), gpu_held=())
    control = FakeControl(result=result)
    app = make_app(FakeBatchSource(), control=control, monotonic=FakeClock(0.0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("K", "y")
        await _wait_for_result(pilot)
        assert control.calls == ["kill"]
        assert app.control_results == [result]
        header = app.query_one(HeaderPane).shown
        assert "kill done" in header and "no server process left" in header and "GPU memory released" in header
        assert "GPU memory released" in app.query_one(HealthPane).shown


async def test_a_failed_kill_shows_survivors_and_held_memory() -> None:
    result = ControlResult("kill", ok=False, survivors=(4301, 4302), gpu_held=((1, 4301, 40 << 30),))
    control = FakeControl(result=result)
    app = make_app(FakeBatchSource(), control=control, monotonic=FakeClock(0.0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("K", "y")
        await _wait_for_result(pilot)
        header = app.query_one(HeaderPane).shown
        assert "kill FAILED" in header and "2 process(es) left (4301, 4302)" in header
        assert "GPU1 40.0 GiB" in header


async def test_an_exception_in_control_is_a_result_not_a_crash() -> None:
    class ExplodingControl(FakeControl):
        async def terminate(self) -> ControlResult:
            raise ConnectionResetError("ssh link lost")

    app = make_app(FakeBatchSource(), control=ExplodingControl(), monotonic=FakeClock(0.0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("T", "y")
        await _wait_for_result(pilot)
        assert app.control_results[0].ok is False and "ssh link lost" in app.control_results[0].detail
        assert "terminate FAILED" in app.query_one(HeaderPane).shown


async def test_dangerous_keys_are_debounced() -> None:
    control = FakeControl()
    clock = FakeClock(0.0)
    app = make_app(FakeBatchSource(), control=control, monotonic=clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("K", "n")
        clock.t += 0.2
        await pilot.press("K")
        assert not isinstance(app.screen, ConfirmScreen)  # a second press within the window is ignored
        clock.t += 1.0
        await pilot.press("K")
        assert isinstance(app.screen, ConfirmScreen)


async def test_read_only_removes_restart_terminate_kill() -> None:
    control = FakeControl()
    app = make_app(FakeBatchSource(), control=control, read_only=True, monotonic=FakeClock(0.0))
    async with app.run_test(size=SIZE) as pilot:
        keys = set(app.active_bindings)
        assert {"r", "T", "K"}.isdisjoint(keys) and "q" in keys and "w" in keys
        await pilot.press("r", "T", "K")
        assert not isinstance(app.screen, ConfirmScreen)
        app.action_kill_server()  # the method itself is guarded, not only the binding
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen) and control.calls == []
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert not any("Kill" in t or "Restart" in t for t in titles)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "kill-server" not in key_table_markdown(read_only=True)


async def test_writable_mode_binds_the_dangerous_keys_and_palette_lists_them() -> None:
    app = make_app(FakeBatchSource(), control=FakeControl())
    async with app.run_test(size=SIZE):
        keys = set(app.active_bindings)
        assert {"r", "T", "K", "f", "slash", "question_mark", "p", "q", "w", "c", "t", "n", "N"} <= keys
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert any(t.startswith("Kill the server") for t in titles)


async def test_no_control_channel_disables_without_crashing() -> None:
    app = make_app(FakeBatchSource(), control=None)
    async with app.run_test(size=SIZE) as pilot:
        binding = app.active_bindings["K"]
        assert binding.enabled is False  # shown dimmed
        await pilot.press("K")
        assert not isinstance(app.screen, ConfirmScreen)


def test_key_table_comes_from_the_registry(spawn: Spawner) -> None:
    table = key_table_markdown()
    for action in ACTIONS:
        assert f"`{action.id}`" in table
    printed = subprocess.run(
        [sys.executable, "-m", "tui.ui.actions"], capture_output=True, text=True, check=True
    ).stdout
    assert printed == table
    assert "| `K` |" in table and "| yes |" in table


async def test_keys_answer_while_a_kill_is_still_running() -> None:
    control = FakeControl(delay_s=60.0)  # a host that takes its time (hung SSH channel)
    app = make_app(FakeBatchSource(), control=control, monotonic=FakeClock(0.0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("K", "y")
        await pilot.pause()
        assert control.calls == ["kill"] and app.control_results == []
        await pilot.press("w", "question_mark")
        assert isinstance(app.screen, HelpScreen) and app.log_pane.view.wrap is True
        await pilot.press("escape", "T")
        assert not isinstance(app.screen, ConfirmScreen)  # one action at a time: the second is refused, not queued


async def test_confirm_dialog_leads_with_a_summary_and_folds_the_commands() -> None:
    """Issue 14: host, N processes, GiB held per GPU and what will happen come first; the commands are one key (c)
    away (issue 23: they are 17-39 lines of sh)."""
    from textual.containers import VerticalScroll

    from tests.helpers.ui_fakes import play, startup_to_loading

    source, clock = FakeBatchSource(), FakeClock()
    control = FakeControl()
    app = make_app(source, control=control, clock=clock, monotonic=FakeClock(0.0))
    async with app.run_test(size=(120, 40)) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        await pilot.press("K")
        assert isinstance(app.screen, ConfirmScreen)
        summary = str(app.screen.query_one("#confirm-summary", Static).render())
        lines = summary.splitlines()
        assert lines[0] == f"host:    {HOST}"
        assert lines[1].startswith("server:  1 process")
        assert lines[2] == "holds:   16.2 GiB on each of 8 GPUs (0, 1, 2, 3, 4, 5, 6, 7)"
        assert lines[3].startswith("will:    SIGKILL to every process")
        commands = app.screen.query_one("#confirm-commands", VerticalScroll)
        assert not commands.display  # the exact commands are there, folded
        assert control.describe("kill") in str(app.screen.query_one("#confirm-command", Static).render())
        assert str(app.screen.query_one("#confirm-commands-key").render()) == "c: the exact commands (1 line of sh)"
        focused = app.focused
        assert isinstance(focused, Button) and focused.id == "no"
        await pilot.press("c")
        assert commands.display and app.focused is commands  # shown, and the arrows scroll them
        await pilot.press("c")
        assert not commands.display and isinstance(app.focused, Button) and app.focused.id == "no"
