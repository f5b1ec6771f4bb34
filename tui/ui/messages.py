"""Messages from the app's workers to the app (facts, past tense); workers never touch widgets."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from tui.core.benchstats import BenchResult
from tui.core.events import ControlResult, Event
from tui.ui.panes.log_view import LogLine


@dataclass
class EventsReceived(Message):
    """One batch from the monitor: events for the reducer and the log lines split out of its bytes."""

    events: tuple[Event, ...]
    lines: tuple[LogLine, ...] = ()
    live: str | None = None  # the log's open line (a progress bar mid-flight), shown under the last line


@dataclass
class ControlFinished(Message):
    """A restart/terminate/kill came back with what the host reported."""

    result: ControlResult


@dataclass
class BenchFinished(Message):
    """A bench came back: its result, or None when it was stopped (Esc) or could not start (`problem`)."""

    result: BenchResult | None
    problem: str = ""
