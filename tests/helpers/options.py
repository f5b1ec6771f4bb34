"""A command line as the value its command is run with (what `cli.main` builds), without running it."""

from __future__ import annotations

from typing import TypeVar

from tui.cli import build_parser
from tui.commands.options import from_namespace
from tui.core.settings import Settings

T = TypeVar("T")


def options_of(kind: type[T], *argv: str, settings: Settings | None = None) -> T:
    """`sglang-tui ARGV…` (a command first) as its options value, of `kind`, with these settings (default: none)."""
    found = from_namespace(build_parser().parse_args(list(argv)), settings or Settings())
    assert isinstance(found, kind), found
    return found
