"""A pane that renders one slice of the readiness state and redraws only when what it shows changed."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.reactive import var
from textual.widgets import Static

from tui.core.state import Readiness


class StatePane(Static):
    """Subclasses implement `draw(state, now) -> Text`; the pane updates only when that text changes."""

    DEFAULT_CSS = """
    StatePane { text-wrap: nowrap; text-overflow: ellipsis; }
    """

    state: var[Readiness] = var(Readiness(), init=False)
    """The whole readiness state (bound to the app's)."""
    now: var[float] = var(0.0, init=False)
    """The app's clock, ticking once a second (bound to the app's)."""

    uses_clock: ClassVar[bool] = True  # False: the pane never shows a time, so ticks never redraw it

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._drawn: Text | None = None

    @property
    def shown(self) -> str:
        """The plain text on screen now."""
        return self._drawn.plain if self._drawn is not None else ""

    def select(self, state: Readiness) -> object:
        """The slice of the state this pane shows (a change elsewhere never redraws it)."""
        return state

    def draw(self, state: Readiness, now: float) -> Text:
        raise NotImplementedError

    def redraw(self) -> None:
        text = self.draw(self.state, self.now)
        if text == self._drawn:
            return
        # Widths come from the layout, heights from the line count: same count, no layout pass (CPU when idle).
        relayout = self._drawn is None or text.plain.count("\n") != self._drawn.plain.count("\n")
        self._drawn = text
        self.update(text, layout=relayout)

    def watch_state(self, old: Readiness, new: Readiness) -> None:
        if self._drawn is not None and self.select(old) == self.select(new):
            return
        self.redraw()

    def watch_now(self) -> None:
        if self.uses_clock:
            self.redraw()

    def on_mount(self) -> None:
        self.redraw()

    def on_resize(self, event: events.Resize) -> None:
        self._drawn = None
        self.redraw()
