"""A pane that renders one slice of the readiness state and redraws only when what it shows changed."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, NamedTuple

from rich.text import Text
from textual import events
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Static

from tui.core.state import Readiness
from tui.core.termtext import terminal_safe
from tui.ui.text import safe_text
from tui.ui.widgetargs import WidgetArgs

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from 3.11


def same_facts(a: Readiness, b: Readiness) -> bool:
    """The two states hold the same facts. Readiness's equality already leaves out the reducer's clock stamp
    (`updated_at`) and holds no words, so this is `==`, with the identity shortcut of an unchanged state."""
    return a is b or a == b


class StateAt(NamedTuple):
    """The readiness state and the clock it is shown at, published together so a fold redraws a pane once."""

    state: Readiness
    now: float

    def looks_like(self, other: StateAt) -> bool:
        """Drawn at the same clock from the same facts: nothing on screen would change."""
        return self.now == other.now and same_facts(self.state, other.state)


def set_titles(widget: Widget, title: str, subtitle: str | None = None) -> None:
    """Set a border title and subtitle only when they differ (every set repaints the whole widget)."""
    titles = (terminal_safe(title), terminal_safe(subtitle) if subtitle is not None else None)
    if getattr(widget, "_set_titles", None) == titles:
        return
    widget._set_titles = titles  # type: ignore[attr-defined]
    widget.border_title, widget.border_subtitle = titles


class StatePane(Static):
    """Subclasses implement `draw(state, now) -> Text`; the pane updates only when that text changes."""

    DEFAULT_CSS = """
    StatePane { text-wrap: nowrap; text-overflow: ellipsis; }
    """

    view: var[StateAt] = var(StateAt(Readiness(), 0.0), init=False)
    """The readiness state and the clock (bound to the app's; the clock ticks once a second)."""

    uses_clock: ClassVar[bool] = True  # False: the pane never shows a time, so ticks never redraw it
    compact: bool = False  # folded for a short terminal (the panes that fold draw less when set)

    def __init__(self, **kwargs: Unpack[WidgetArgs]) -> None:
        super().__init__(**kwargs)
        self._drawn: Text | None = None

    @property
    def state(self) -> Readiness:
        return self.view.state

    @property
    def now(self) -> float:
        return self.view.now

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
        text = safe_text(self.draw(self.state, self.now))  # host and log text never reaches Textual raw
        if text == self._drawn:
            return
        # Widths come from the layout, heights from the line count: same count, no layout pass (CPU when idle).
        relayout = self._drawn is None or text.plain.count("\n") != self._drawn.plain.count("\n")
        self._drawn = text
        self.update(text, layout=relayout)

    def watch_view(self, old: StateAt, new: StateAt) -> None:
        ticked = self.uses_clock and old.now != new.now
        if self._drawn is not None and not ticked and self.select(old.state) == self.select(new.state):
            return
        self.redraw()

    def on_mount(self) -> None:
        self.redraw()

    def on_resize(self, event: events.Resize) -> None:
        # Only a pane whose text depends on its width draws anew (the shard bars); the text of every other pane is
        # the same at any size, and Textual itself lays it out again. A forced update here redrew a pane whose size
        # a layout pass changed after the facts had settled (a flaky "drawn between two ticks").
        self.redraw()
