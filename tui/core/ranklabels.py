"""Rank labels, in one place: parsed from log prefixes and process titles, ordered, and shortened for words.

A label is the rank prefix as SGLang prints it ("TP3", "DP1 TP3 EP3"); PyTorch's c10d lines say "rank3"; a
scheduler's process title is the label with `_` for spaces (`sglang::scheduler_DP1_TP3`, or `sglang::scheduler`
for TP=1, which is TP0).
"""

from __future__ import annotations

import re

from tui.core.lazyre import lazy

_TOKEN = lazy(r"(ATTN_CP|MOE_DP|DP|PP|TP|EP)(\d+)(?!\d)")
_TP_TOKEN = lazy(r"TP(\d+)", re.ASCII)
_TITLE = lazy(r"sglang::scheduler((?:_[A-Z_]*\d+)*)(?:\s|$)")
_TITLE_SUFFIX = lazy(r"scheduler(?:_(.+))?$")
_PLAIN_TP = lazy(r"TP\d+")
_RANK = lazy(r"^(?:[A-Z]{2}\d+ )*TP\d+$")

RankKey = tuple[tuple[str, int], ...]


def rank_key(text: str) -> RankKey:
    """("DP", 1), ("TP", 3) … from a rank label ("DP1 TP3") or a title suffix ("_DP1_TP3"), in order."""
    return tuple((kind, int(num)) for kind, num in _TOKEN.findall(text))


def title_key(name: str) -> RankKey | None:
    """The rank key of a scheduler process title, or None when the process is no scheduler."""
    match = _TITLE.search(name.strip() + " ")
    return None if match is None else rank_key(match.group(1))


def rank_of(title: str) -> str | None:
    """`sglang::scheduler_TP3` -> "TP3", `sglang::scheduler_DP1_TP3` -> "DP1 TP3", `sglang::scheduler` -> "TP0"."""
    name = title.split()[0] if title else ""
    m = _TITLE_SUFFIX.search(name)
    if not m or "::" not in name:
        return None
    return (m.group(1) or "TP0").replace("_", " ")


def tp_index(label: str) -> int | None:
    """The TP index in a rank label ("DP1 TP3 EP3" → 3, "rank7" → 7), None when it has none."""
    if label.startswith("rank") and label[4:].isdigit():
        return int(label[4:])
    m = _TP_TOKEN.search(label)
    return int(m.group(1)) if m else None


def is_rank(name: str) -> bool:
    """A scheduler rank's label (what a dump names "TP3", "DP1 TP3"), not "main", "detokenizer" or "pid N"."""
    return _RANK.match(name) is not None


def sort_key(label: str) -> tuple[tuple[str, int], ...]:
    """Natural order of rank labels: TP2 before TP10, DP0 TP1 before DP1 TP0; other names after by their words."""
    return tuple((m.group(1), int(m.group(2))) for m in re.finditer(r"([A-Za-z_]+)(\d+)", label)) or ((label, 0),)


def ranks_span(names: tuple[str, ...] | list[str]) -> str:
    """("TP0", "TP1", "TP2", "TP4") -> "TP0–2, TP4" (runs of plain TP ranks collapsed; others listed)."""
    plain = sorted(int(n[2:]) for n in names if _PLAIN_TP.fullmatch(n))
    other = [n for n in names if not _PLAIN_TP.fullmatch(n)]
    parts: list[str] = []
    i = 0
    while i < len(plain):
        j = i
        while j + 1 < len(plain) and plain[j + 1] == plain[j] + 1:
            j += 1
        parts.append(f"TP{plain[i]}" if i == j else f"TP{plain[i]}–{plain[j]}")
        i = j + 1
    return ", ".join(parts + other)


def tp_floor(seen: tuple[int, ...]) -> str | None:
    """The TP size's lower bound that rank tags give where no line states the size: (0, …, 15) -> "tp ≥ 16: ranks
    TP0–TP15 seen". None for no tag or TP0 alone (that says TP > 1, no bound worth saying)."""
    if not seen or seen[-1] < 1:
        return None
    runs: list[str] = []
    i = 0
    while i < len(seen):
        j = i
        while j + 1 < len(seen) and seen[j + 1] == seen[j] + 1:
            j += 1
        runs.append(f"TP{seen[i]}" if i == j else f"TP{seen[i]}–TP{seen[j]}")
        i = j + 1
    return f"tp ≥ {seen[-1] + 1}: {'rank' if len(seen) == 1 else 'ranks'} {', '.join(runs)} seen"
