"""tui.core.lazyre: a pattern compiled at its first use answers as re.compile's (issue 32: the parser's ~100
module-level patterns no longer cost every fresh process their compilation)."""

from __future__ import annotations

import importlib
import re

from tests.helpers.sim import ROOT
from tui.core.lazyre import _Lazy, lazy


def test_a_lazy_pattern_compiles_at_its_first_use_and_answers_as_re_compile() -> None:
    source, flags = r"(?P<done>\d+)/(?P<total>\d+) shards", re.IGNORECASE
    pattern, compiled = lazy(source, flags), re.compile(source, flags)
    assert "search" not in vars(pattern)  # nothing compiled yet
    line = "Loading safetensors checkpoint SHARDS: 3/8 Shards"
    assert pattern.search(line) is not None and "search" in vars(pattern)  # compiled once, kept
    assert pattern.search(line).groupdict() == compiled.search(line).groupdict() == {"done": "3", "total": "8"}
    assert pattern.match(line) is compiled.match(line) is None
    assert pattern.sub("#", line) == compiled.sub("#", line)
    assert pattern.findall(line) == compiled.findall(line)
    assert (pattern.pattern, pattern.flags, pattern.groupindex) == (
        compiled.pattern,
        compiled.flags,
        compiled.groupindex,
    )


def test_bytes_patterns_too() -> None:
    assert lazy(rb"X\n").split(b"aX\nb") == [b"a", b"b"]


def test_every_lazy_pattern_of_the_core_compiles() -> None:
    """A pattern now compiles at its first use, not at import: a bad one would fail only on the log line that first
    needs it. Each module-level pattern of tui/core and tui/sources is compiled here."""
    names = [f"tui.core.{p.stem}" for p in (ROOT / "tui" / "core").glob("*.py")] + ["tui.sources.logtail"]
    found = 0
    for name in names:
        for value in vars(importlib.import_module(name)).values():
            if isinstance(value, _Lazy):
                value.search(value.pattern[:0])  # compiles it (re.error on a bad pattern)
                found += 1
    assert found > 90  # the parser's, the remedies', the job targets'
