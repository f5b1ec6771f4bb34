"""STUB (being written): the readiness reducer."""

from __future__ import annotations

from tui.core.events import Event
from tui.core.state import Readiness


def reduce(state: Readiness, event: Event, now: float) -> Readiness:
    return state
