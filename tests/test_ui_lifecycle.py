"""Pilot tests of the server's lifecycle on screen: launch when absent, restart shows a fresh startup, kill
shows what the reducer says; and keys 1-4 focus and maximize panes. A fake control (named so) stands in for
ServerControl; the events are folded by the real reducer."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from textual.notifications import Notify

from tests.helpers.processes import Spawner
from tests.helpers.ui_fakes import (
    HOST,
    LAUNCH_LINE,
    T0,
    FakeBatchSource,
    FakeClock,
    FakeControl,
    Step,
    make_app,
    play,
    startup_to_loading,
    until,
)
from tui.core.events import ControlResult, LogActivity, LogReset, ServerProcess
from tui.core.state import Phase
from tui.ui.actions import ACTIONS
from tui.ui.panes.gpus import GpuPane
from tui.ui.panes.header import HeaderPane
from tui.ui.panes.health import HealthPane
from tui.ui.panes.log_pane import LogPane
from tui.ui.panes.log_view import LogLine, LogView
from tui.ui.panes.shards import ShardsPane
from tui.ui.panes.timeline import TimelinePane
from tui.ui.screens.confirm import ConfirmScreen

SIZE = (160, 48)


async def _until(pilot: object, done: object) -> None:
    await until(pilot, done)  # type: ignore[arg-type]


def _log_texts(app: object) -> list[str]:
    return [line.text for line in app.log_pane.view.lines]  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------- launch if absent


async def test_launch_when_no_server_is_found_shows_the_command_and_the_result() -> None:
    control = FakeControl(process=ServerProcess(False, detail="no server process found (port 30000)"))
    seen: list[object] = []
    app = make_app(FakeBatchSource(), control=control, launch_if_absent=True)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await _until(pilot, lambda: app.control_results)
        await pilot.pause()
        assert control.calls == ["process_state", "launch"]
        result = app.control_results[-1]
        assert result.action == "launch" and result.ok
        log = _log_texts(app)
        assert any("no server process found on :30000: launching it" in t for t in log)
        assert f"$ {LAUNCH_LINE}" in log and any("sglang-tui launch done" in t for t in log)
        header = app.query_one(HeaderPane).shown
        assert "last action: launch done: started pid 4242" in header and "STARTING" in header
        assert app.state.launched
        toasts = [m.notification for m in seen if isinstance(m, Notify)]
        assert any(n.title == "launch" and "launch done: started pid 4242" in n.message for n in toasts)


async def test_a_running_server_is_watched_not_launched_again() -> None:
    control = FakeControl()  # alive
    app = make_app(FakeBatchSource(), control=control, launch_if_absent=True)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: app.state.process_alive is True)
        assert control.calls == ["process_state"] and app.control_results == []
        assert "process: alive (pid 4242)" in app.query_one(HeaderPane).shown


async def test_read_only_never_launches() -> None:
    control = FakeControl(process=ServerProcess(False))
    app = make_app(FakeBatchSource(), control=control, launch_if_absent=True, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(5):
            await pilot.pause()
        assert control.calls == [] and app.control_results == []


async def test_without_launch_the_header_says_no_server_process_found() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    control = FakeControl(process=ServerProcess(False))
    app = make_app(source, control=control, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(
            pilot, source, clock, [Step(T0, [ServerProcess(False, detail="no server process found (port 30000)")])]
        )
        assert "process: no server process found on :30000" in app.query_one(HeaderPane).shown
        assert "launch" not in control.calls and app.state.phase is Phase.STARTING


async def test_header_counts_pids_in_words() -> None:
    clock, source = FakeClock(T0), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, [Step(T0, [ServerProcess(True, (4242,))])])
        assert "process: alive (pid 4242)" in app.query_one(HeaderPane).shown
        await play(pilot, source, clock, [Step(T0 + 1, [ServerProcess(True, tuple(range(4242, 4251)))])])
        assert "process: alive (9 pids)" in app.query_one(HeaderPane).shown


# ------------------------------------------------------------------------------------------- restart, kill


async def test_restart_shows_a_fresh_startup_and_marks_the_log() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    control = FakeControl()
    app = make_app(source, control=control, clock=clock, monotonic=FakeClock(0.0))
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        assert "57/64" in app.query_one(ShardsPane).shown and "TP7" in app.query_one(ShardsPane).shown
        clock.t += 1
        await pilot.press("r", "y")
        await _until(pilot, lambda: app.control_results)
        # the launch truncated the log: the tail says so, then the new run's first line comes
        clock.t += 1
        await play(
            pilot,
            source,
            clock,
            [
                Step(
                    clock.t,
                    [
                        LogReset("truncated", "/tmp/server.log: size 120 < offset 9000"),
                        LogActivity(40, b"[2025-11-29 10:05:00] server_args=ServerArgs(...)\n"),
                    ],
                )
            ],
        )
        shards = app.query_one(ShardsPane).shown
        assert "57/64" not in shards and "TP7" not in shards and "ranks   none seen yet" in shards
        assert "waiting" in shards
        header = app.query_one(HeaderPane).shown
        assert "STARTING" in header and "LOADING" not in header
        assert "last action: restart done: the old processes are gone; started pid 4343" in header
        assert (
            "0.0s in phase · 0.0s total" in header
        )  # counted from the new start (the truncated log), not from the first run
        rows = app.query_one(GpuPane)
        assert rows.get_row("gpu3")[1].plain == "—"  # the old run's rank mapping is gone
        log = _log_texts(app)
        restarted = [i for i, t in enumerate(log) if "log restarted (truncated)" in t]
        assert restarted and log[-1].endswith("server_args=ServerArgs(...)") and restarted[-1] < len(log) - 1
        assert any(t == f"$ {LAUNCH_LINE}" for t in log)  # the launch half of the restart, exactly


async def test_kill_shows_stopped_by_sglang_tui_and_the_result() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    result = ControlResult("kill", ok=True, command="kill -KILL -- -4242")
    app = make_app(source, control=FakeControl(result=result), clock=clock, monotonic=FakeClock(0.0))
    seen: list[object] = []
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        clock.t += 1
        await pilot.press("K", "y")
        await _until(pilot, lambda: app.control_results)
        await play(pilot, source, clock, [Step(clock.t + 1, [ServerProcess(False, detail="server processes gone")])])
        header = app.query_one(HeaderPane).shown
        assert app.state.phase is Phase.FAILED
        # issue 14: our own kill reads STOPPED, never FAILED, and says what was done and whether GPU memory came back
        assert " STOPPED " in header and "FAILED" not in header and "stopped by sglang-tui (kill)" in header
        assert (
            "■ STOPPED  kill done: no server process left; GPU memory released" in header and "process: gone" in header
        )
        assert "✗" not in header  # our own kill is not shown as the server's failure
        titles = [m.notification.title for m in seen if isinstance(m, Notify)]
        assert f"{HOST}: the server failed" not in titles
        # one toast for one stop: the kill's own result (issue 23: stacked toasts said the same thing twice)
        assert titles.count("kill") == 1 and f"{HOST}: the server stopped" not in titles
        assert "kill done: no server process left" in header
        shards = app.query_one(ShardsPane).shown
        assert "stopped" in shards and "failed" not in shards
        timeline = app.query_one(TimelinePane).shown
        assert "■ " in timeline and "stopped (by sglang-tui)" in timeline and "✗" not in timeline
        assert any("sglang-tui kill done" in t for t in _log_texts(app))


# ------------------------------------------------------------------------------------------- keys 1-4


async def test_keys_1_to_4_focus_then_maximize_then_restore() -> None:
    app = make_app(FakeBatchSource(), control=FakeControl(), monotonic=FakeClock(0.0))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        for key, kind in (("2", ShardsPane), ("3", GpuPane), ("4", HealthPane)):
            await pilot.press(key)
            assert isinstance(app.focused, kind) and screen.maximized is None
        await pilot.press("4")
        assert isinstance(screen.maximized, HealthPane)
        header, health = app.query_one(HeaderPane).region, app.query_one(HealthPane).region
        assert header.y == 0 and health.y == header.bottom and health.height > 30  # fills the screen under the header
        await pilot.press("2")  # another pane while one is maximized: that one, maximized
        assert isinstance(screen.maximized, ShardsPane) and isinstance(app.focused, ShardsPane)
        await pilot.press("2")
        assert screen.maximized is None and isinstance(app.focused, ShardsPane)
        await pilot.press("1")
        assert isinstance(app.focused, LogView)
        await pilot.press("1")
        assert isinstance(screen.maximized, LogPane) and "sglang-tui" in app.query_one(HeaderPane).shown
        await pilot.press("escape")
        assert screen.maximized is None


async def test_the_health_pane_hidden_at_80_columns_opens_maximized() -> None:
    app = make_app(FakeBatchSource(), control=FakeControl(), monotonic=FakeClock(0.0))
    async with app.run_test(size=(80, 24)) as pilot:
        assert not app.query_one(HealthPane).display or app.query_one(HealthPane).size.width == 0
        await pilot.press("4")
        await pilot.pause()
        assert isinstance(app.screen.maximized, HealthPane) and app.query_one(HealthPane).size.width > 40


async def test_pane_keys_do_nothing_under_a_dialog() -> None:
    app = make_app(FakeBatchSource(), control=FakeControl(), monotonic=FakeClock(0.0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("K", "2")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert app.screen.maximized is None


def test_pane_keys_are_in_the_registry_help_and_key_table(spawn: Spawner) -> None:
    keys = {a.key: a for a in ACTIONS}
    assert {"1", "2", "3", "4"} <= set(keys) and keys["3"].action == "pane('gpus')"
    table = subprocess.run([sys.executable, "-m", "tui.ui.actions"], capture_output=True, text=True, check=True).stdout
    for key, word in (("1", "log"), ("2", "weights"), ("3", "GPUs"), ("4", "health")):
        row = next(line for line in table.splitlines() if line.startswith(f"| `{key}` |"))
        assert word in row


async def test_restart_shows_no_flash_of_failure_and_no_stale_green_health() -> None:
    """While our restart runs, the old processes going away is not "failed: server process exited"; after it,
    the old server's /health answer is not shown as this launch's (issue 14)."""
    from tests.helpers.ui_fakes import startup_to_ready
    from tui.core.events import HealthResult, Tick

    clock, source, running = FakeClock(), FakeBatchSource(), asyncio.Event()
    app = make_app(source, control=FakeControl(hold=running), clock=clock, monotonic=FakeClock(0.0))
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_ready())
        await play(pilot, source, clock, [Step(clock.t + 1, [HealthResult("/health", "ok", 200, 0.01)])])
        assert app.state.phase in (Phase.READY, Phase.SERVING)
        await pilot.press("r", "y")
        await _until(pilot, lambda: app._control_in_flight == "restart")
        await play(pilot, source, clock, [Step(clock.t + 1, [ServerProcess(False, detail="server processes gone")])])
        assert app.state.phase is not Phase.FAILED and "exited" not in app.query_one(HeaderPane).shown
        running.set()  # the restart ends only now: the processes went away while it ran
        await _until(pilot, lambda: app.control_results)
        await play(pilot, source, clock, [Step(clock.t + 1, [Tick()])])
        header = app.query_one(HeaderPane).shown
        assert app.state.phase is Phase.STARTING
        assert "health says: before this launch: ok 200" in header


async def test_a_batch_still_queued_when_the_app_exits_is_not_a_crash() -> None:
    """The two-node TUI posts a member's batch while the app exits: by then the screen (and its log pane) is
    gone, and showing the batch's lines must not raise NoMatches (the app re-raises it when the test ends)."""
    app = make_app(FakeBatchSource())
    async with app.run_test():
        pass
    app._show_lines([LogLine("a line that arrives too late", None, None)], None)
