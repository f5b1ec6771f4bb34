"""tui.core.fold.Fold: the one fold step of the TUI, `wait`, the deployments and the benches, on real events
through the real reducer."""

from __future__ import annotations

import pytest

from tui.core.events import Event, Milestone, ServerArgs, Tick
from tui.core.fold import Fold
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness


def test_a_batch_is_reduced_then_stepped_then_its_phase_fed_back() -> None:
    told: list[Phase] = []
    seen: list[tuple[Phase, float]] = []

    def step(state: Readiness, now: float) -> Readiness:
        seen.append((state.phase, now))  # the steps see the reduced state, at the batch's clock
        return state

    fold = Fold(steps=(step,), feedback=told.append)
    batch: list[Event] = [ServerArgs(model="m", tp_size=2), Milestone("load_begin")]
    state = fold(Readiness(), batch, 10.0)
    expected = Readiness()
    for event in batch:
        expected = reduce(expected, event, 10.0)
    assert state == expected and state.phase is Phase.LOADING_WEIGHTS
    assert seen == [(Phase.LOADING_WEIGHTS, 10.0)]
    fold(state, [Tick()], 11.0)
    assert told == [Phase.LOADING_WEIGHTS, Phase.LOADING_WEIGHTS]  # after every batch, as `wait` always did


def test_a_failing_step_is_said_and_passed_over_with_on_error_and_raised_without() -> None:
    def broken(state: Readiness, now: float) -> Readiness:
        raise RuntimeError("history file is broken")

    fold = Fold(steps=(broken,))
    said: list[str] = []
    state = fold(Readiness(), [Milestone("load_begin")], 5.0, on_error=said.append)
    assert state.phase is Phase.LOADING_WEIGHTS  # the reducer's work is kept
    assert said == ["state step failed: history file is broken"]
    with pytest.raises(RuntimeError, match="history file is broken"):
        fold(Readiness(), [Tick()], 5.0)
