"""How many toasts fit under the header: the newest are kept, the oldest dropped (pure: sizes in, a count out).

Textual's toast rack docks at the bottom and, laid out on a hidden layer, has no size of its own to scroll by: capped
at the rows under the header, a taller stack ran off the bottom of the screen, and the newest toast, the one just
said, was the one never seen (issue 29: "nothing to kill" under three older toasts at 120x40). So the stack is kept
to what fits, newest first, as k9s keeps one flash line: an older notice that no longer fits is dismissed, not
hidden. Uncapped, a stack this estimate misjudges by a row grows upwards, and the newest stays in view.
"""

from __future__ import annotations

import textwrap

TOAST_WIDTH = 40  # app.tcss: `Toast { width: 40 }`, in cells (it says why)
TOAST_CHROME_ROWS = 3  # its padding (one row above, one below) and its margin-top
TOAST_CHROME_COLS = 3  # its left border and its padding (one column each side)


def toast_width(screen_width: int) -> int:
    return min(TOAST_WIDTH, screen_width)


def toast_rows(title: str, message: str, width: int) -> int:
    """Rows one toast takes at this width: its title's line, the message word-wrapped, its padding and margin."""
    inner = max(1, width - TOAST_CHROME_COLS)
    lines = sum(max(1, len(textwrap.wrap(line, inner, break_on_hyphens=False))) for line in message.split("\n"))
    return lines + (1 if title else 0) + TOAST_CHROME_ROWS


def newest_that_fit(heights: list[int], rows: int) -> int:
    """How many of the newest toasts (heights oldest first) fit in `rows`; the newest always stays."""
    used = kept = 0
    for height in reversed(heights):
        if kept and used + height > rows:
            break
        used += height
        kept += 1
    return kept
