"""The text captures in screenshots/tmux/ are as new as the code that draws them: the digest of tui/ui (its Python
and its styles) when they were made, kept in screenshots/tmux/DRAWN_BY, is today's. Once that code changes, make
them again: `.venv/bin/python -m pytest -m screenshots tests/test_screenshots_tmux.py` (a few minutes)."""

from __future__ import annotations

import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "screenshots" / "tmux"
DRAWN_BY = CAPTURES / "DRAWN_BY"
DRAWING = ROOT / "tui" / "ui"


def drawing_digest() -> str:
    """sha256 over every file of tui/ui that draws (.py, .tcss), by path and content."""
    digest = hashlib.sha256()
    for path in sorted(p for p in DRAWING.rglob("*") if p.suffix in (".py", ".tcss") and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def test_the_captures_are_as_new_as_the_code_that_draws_them() -> None:
    assert DRAWN_BY.exists(), f"{DRAWN_BY} is missing: make the captures (this module's doc says how)"
    assert DRAWN_BY.read_text().strip() == drawing_digest(), (
        "tui/ui changed since screenshots/tmux/*.txt were made: "
        ".venv/bin/python -m pytest -m screenshots tests/test_screenshots_tmux.py"
    )
