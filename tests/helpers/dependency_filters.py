"""The suite hears the dependencies' warnings as the user does: not at all (tui/commands/dependency_warnings.py).

The tool keeps them out at its entry point; the tests import asyncssh and the rest in-process, past that entry, so
pytest gets the same rule as its own filters (cryptography 51's DSA deprecation from asyncssh's import was 40 lines
of the suite's summary). `SGLANG_TUI_DEBUG=1` or `-W` shows them here too, as it does for the tool."""

from __future__ import annotations

import os

import pytest

from tui.commands.dependency_warnings import DEPENDENCY_CATEGORIES, DEPENDENCY_PATTERN, warnings_wanted


def keep_dependency_warnings_out(config: pytest.Config) -> None:
    if warnings_wanted(os.environ):
        return
    for category in DEPENDENCY_CATEGORIES:
        name = f"{category.__module__}.{category.__qualname__}"
        config.addinivalue_line("filterwarnings", f"ignore::{name}:{DEPENDENCY_PATTERN}")
