"""Where the history lives: --history PATH, else $SGLANG_TUI_HISTORY, else $XDG_STATE_HOME/sglang-tui/…; and that
state directory, where the dumps, the saved logs and the copies go too."""

from __future__ import annotations

import os
from pathlib import Path

ENV = "SGLANG_TUI_HISTORY"
FILENAME = "history.sqlite3"


def state_dir(env: dict[str, str] | None = None) -> Path:
    """$XDG_STATE_HOME/sglang-tui (default ~/.local/state/sglang-tui): the history, dumps, saved logs and copies."""
    env = dict(os.environ) if env is None else env
    state = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return Path(state) / "sglang-tui"


def default_path(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    if env.get(ENV):
        return Path(env[ENV]).expanduser()
    return state_dir(env) / FILENAME


def history_path(given: str | None = None, *, off: bool = False) -> Path | None:
    """The history file: --history PATH (`given`), else the default; None with --no-history (`off`)."""
    if off:
        return None
    return Path(given).expanduser() if given else default_path()
