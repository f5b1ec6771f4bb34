"""The keywords every Textual widget's constructor takes, typed, for the panes that pass them on to it."""

from __future__ import annotations

from typing import TypedDict


class WidgetArgs(TypedDict, total=False):
    name: str | None
    id: str | None
    classes: str | None
    disabled: bool
