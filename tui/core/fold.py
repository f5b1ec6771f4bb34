"""One fold step, the same for the TUI, `wait`, the deployments and the benches: a batch of events into the
state with the reducer, then the steps that follow each batch (the weights' bytes, the launch history), then
the phase fed back to the watcher (the health poller's cadence). Pure: the steps and the feedback are handed
in by the layer that owns them (tui/sources/session.py builds them for one Monitor)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tui.core.events import Event
from tui.core.readiness import reduce
from tui.core.record import Record, record
from tui.core.state import Phase, Readiness

StateStep = Callable[[Readiness, float], Readiness]
"""A step after the reducer, at clock time `now`: the weight files' sizes folded in, the history attached."""


@record
class Fold(Record):
    """state + batch + now -> state, with the steps after the reducer and the phase told to `feedback`."""

    steps: tuple[StateStep, ...] = ()
    feedback: Callable[[Phase], None] | None = None
    """Told the phase after every batch (Monitor.set_phase: the health poller picks its cadence from it)."""

    def __call__(
        self, state: Readiness, batch: Iterable[Event], now: float, *, on_error: Callable[[str], None] | None = None
    ) -> Readiness:
        """The state after the batch. on_error: a failing event, step or feedback is said there and passed
        over, the state before it kept (the TUI: a bug must not freeze the screen); without it, it raises."""
        for event in batch:
            try:
                state = reduce(state, event, now)
            except Exception as err:
                _said(on_error, f"reduce failed on {type(event).__name__}: {err}", err)
        for step in self.steps:
            try:
                state = step(state, now)
            except Exception as err:  # the history or a stat must never take the watcher down
                _said(on_error, f"state step failed: {err}", err)
        if self.feedback is not None:
            try:
                self.feedback(state.phase)
            except Exception as err:
                _said(on_error, f"phase feedback failed: {err}", err)
        return state


def _said(on_error: Callable[[str], None] | None, line: str, err: Exception) -> None:
    """Say a failure where the caller wants it; with nowhere to say it, raise it again."""
    if on_error is None:
        raise err
    on_error(line)
