"""Regular expressions compiled on their first use, not at import (issue 32).

The parser's modules hold ~100 module-level patterns; a `probe` call is a fresh process that reads the few lines
written since its last call and uses a handful of them, yet compiling them all cost it ~20 ms of CPU at import
(Python's `re` compiles in Python). `lazy(pattern, flags)` stands where `re.compile(pattern, flags)` stood: the
same methods, the pattern compiled once, at the first `.match`/`.search`/… (a long-lived watcher pays it once).
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast

# what a compiled pattern answers; each is copied onto the stand-in at its first use (then a plain attribute)
_METHODS = ("match", "search", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner")


class _Lazy:
    """Stands for re.compile(pattern, flags) until any of its methods is first looked up."""

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self.pattern = pattern
        self.flags_given = flags

    def __getattr__(self, name: str) -> Any:  # only for what the instance does not hold yet
        compiled = re.compile(self.pattern, self.flags_given)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        self.flags, self.groups, self.groupindex = compiled.flags, compiled.groups, compiled.groupindex
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r})"


def lazy(pattern: AnyStr, flags: int | re.RegexFlag = 0) -> re.Pattern[AnyStr]:
    """re.compile(pattern, flags), done at the first use."""
    return cast("re.Pattern[AnyStr]", _Lazy(pattern, int(flags)))
