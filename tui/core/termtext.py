"""Text from the host or the user made safe to show on a terminal: the one rule every view uses.

A file name, a process title, a host name or a log line can hold bytes a terminal obeys: ESC starts a
sequence that retitles the window, writes the clipboard (OSC 52) or switches the character set; C1 controls
(U+0080-U+009F) do the same in one character on some terminals; BEL, backspace and carriage return rewrite what
is shown; bidirectional overrides and zero-width characters make a name read as another. Each such character
becomes one visible mark, so the text keeps its length (a styled span still covers the same characters) and
the reader sees that something odd is there. Newlines and tabs stay.
"""

from __future__ import annotations

from tui.core.lazyre import lazy

# C0 but tab and newline; DEL and C1; the bidi controls (ALM, LRM/RLM, embeddings and overrides, isolates);
# zero-width space, joiners, word joiner and the invisible operators, BOM; line and paragraph separators;
# lone surrogates (a byte that was not UTF-8, kept by surrogateescape: a strict stream cannot even write one).
UNSAFE = lazy(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ud800-\udfff]"
)


def terminal_safe(text: str, mark: str = "?") -> str:
    """`text` with every character a terminal would obey (see UNSAFE) replaced by `mark` (one character)."""
    return UNSAFE.sub(mark, text) if UNSAFE.search(text) else text
