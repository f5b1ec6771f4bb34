"""SourceFailed: a crashed source worker is a fact about that source only, and the health pane names it."""

from __future__ import annotations

from tests.helpers.ui_fakes import FakeBatchSource, FakeClock, Step, make_app, play, startup_to_ready
from tui.core.events import Event, HealthResult, ServerProcess, SourceFailed, Tick
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.ui.panes.health import HealthPane

SIZE = (160, 50)


def _ready_state() -> Readiness:
    s = Readiness()
    events: list[Event] = [ServerProcess(True, (42,)), HealthResult("/health", "ok", 200, 0.01)]
    for i, event in enumerate(events):
        s = reduce(s, event, 10.0 + i)
    return s


def test_a_source_failure_changes_no_other_fact() -> None:
    before = _ready_state()
    failed = reduce(before, SourceFailed("processes", "RuntimeError: boom"), 20.0)
    assert failed.source_failures == (("processes", "RuntimeError: boom", 20.0),)
    # Everything else is what a Tick at the same time gives: health, process, phase untouched.
    assert failed.evolve(source_failures=()) == reduce(before, Tick(), 20.0)
    assert failed.health_ready and failed.process_alive is True


def test_the_latest_failure_per_source_is_kept() -> None:
    s = _ready_state()
    s = reduce(s, SourceFailed("processes", "RuntimeError: boom"), 20.0)
    s = reduce(s, SourceFailed("gpus", "OSError: gone"), 21.0)
    s = reduce(s, SourceFailed("processes", "RuntimeError: again"), 22.0)
    assert s.source_failures == (("gpus", "OSError: gone", 21.0), ("processes", "RuntimeError: again", 22.0))


async def test_the_health_pane_names_the_failed_source() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_ready())
        await play(pilot, source, clock, [Step(clock.t, [SourceFailed("processes", "RuntimeError: boom")])])
        assert app.state.phase in (Phase.READY, Phase.SERVING)  # the verdict stands
        shown = app.query_one(HealthPane).shown
        assert "process watch failed (RuntimeError: boom); restarting" in shown
        assert "ok 200" in shown  # health's own fact is still there
