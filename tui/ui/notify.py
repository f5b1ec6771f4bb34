"""Desktop notifications through the terminal: OSC 9 (iTerm2, kitty) or OSC 777 (WezTerm, foot, rxvt), else none
(the bell still rings). Text from the log is stripped of control characters: no raw escape reaches the terminal."""

from __future__ import annotations

from tui.core.termtext import terminal_safe

MAX_CHARS = 200


def _clean(text: str) -> str:
    text = terminal_safe(text.replace("\n", " ").replace("\t", " "), " ")  # inside an OSC: not even a newline
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def osc_notification(env: dict[str, str], title: str, body: str) -> str | None:
    """The escape sequence that raises a notification in this terminal, or None where none is known to work
    (inside tmux or screen without passthrough, or an unknown terminal)."""
    if env.get("TMUX") or env.get("STY"):
        return None
    program = env.get("TERM_PROGRAM", "")
    term = env.get("TERM", "")
    if program == "iTerm.app" or "kitty" in term or env.get("KITTY_WINDOW_ID"):
        return f"\x1b]9;{_clean(title)}: {_clean(body)}\x07"
    if program == "WezTerm" or term.startswith(("foot", "rxvt")):
        return f"\x1b]777;notify;{_clean(title).replace(';', ',')};{_clean(body)}\x07"
    return None
