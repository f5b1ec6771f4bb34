"""The demo's own history (issue 23, item 9): its launches are recorded in demo-history.sqlite3 beside the real
history file, never in it, so the second run has an ETA from the first and every third run's slower weights are
flagged against the runs before. The real simulator through ServerControl and the app as run_tui builds it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.helpers.processes import Spawner
from tui.commands.demo import (
    DEMO_HOST,
    SLOW_WEIGHTS,
    demo_history_path,
    launch_variation,
    ready_launches,
    start_demo,
    stop_demo,
)
from tui.commands.watch import build_app
from tui.core.eta import estimate, eta_words
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line
from tui.history.paths import default_path


def test_the_demo_history_is_beside_the_real_one_and_never_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SGLANG_TUI_HISTORY", str(tmp_path / "mine.sqlite3"))
    assert demo_history_path() == tmp_path / "demo-history.sqlite3"
    monkeypatch.delenv("SGLANG_TUI_HISTORY")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert demo_history_path() == tmp_path / "state" / "sglang-tui" / "demo-history.sqlite3" != default_path()


def test_every_third_launch_loads_its_weights_slower_unless_a_fault_is_shown() -> None:
    assert launch_variation(1, None) == ["--seed", "1"]
    assert launch_variation(2, None) == ["--seed", "2"]
    assert launch_variation(3, None) == ["--seed", "3", "--slow", f"weights={SLOW_WEIGHTS:g}"]
    assert launch_variation(6, None)[2:] == ["--slow", f"weights={SLOW_WEIGHTS:g}"]
    assert launch_variation(3, "oom-capture") == ["--seed", "3"]


async def demo_to_ready(speed: float) -> tuple[Readiness, str]:
    """One `sglang-tui demo` launch watched to ready and its /server_info read (as a person watching it sees it;
    a launch quit before that read is recorded with no version, a key of its own: m29 saw the second run find no
    past for it), then quit: its last state and the command it was launched with."""
    running = await start_demo(speed, None)
    try:
        opts = running.watch_options(False)
        initial = reduce(Readiness(), running.launched, time.time())
        app, session = build_app(running.host, opts, host_label=DEMO_HOST, initial=initial, control=running.control)
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                for _ in range(2400):
                    await pilot.pause(0.05)
                    if app.state.phase in (Phase.READY, Phase.SERVING) and app.state.server.version is not None:
                        break
                state = app.state
        finally:
            await session.close()
            app.history_recorder.finish(app.state)  # type: ignore[attr-defined]
    finally:
        await stop_demo(running)
    assert state.phase in (Phase.READY, Phase.SERVING) and state.server.version, (verdict_line(state), state.server)
    return state, running.launch


async def test_the_second_run_has_an_eta_from_the_first_and_the_third_is_slower(spawn: Spawner) -> None:
    real = Path(os.environ["SGLANG_TUI_HISTORY"])  # the test's own "real" history: the demo never touches it
    first, first_launch = await demo_to_ready(200.0)
    assert (first.past is None or first.past.count == 0) and "--seed 1" in first_launch and "--slow" not in first_launch
    assert ready_launches(demo_history_path()) == 1 and not real.exists()
    second, second_launch = await demo_to_ready(200.0)
    assert second.past is not None and second.past.count == 1, second.past
    assert "last 1 launch" in eta_words(estimate(second, second.updated_at))
    assert "--seed 2" in second_launch and "--slow" not in second_launch
    assert ready_launches(demo_history_path()) == 2 and not real.exists()
    third = await start_demo(200.0, None)  # the launch alone: its command is what decides
    try:
        assert f"--slow weights={SLOW_WEIGHTS:g}" in third.launch and "--seed 3" in third.launch
    finally:
        await stop_demo(third)
