"""The settings file, $XDG_CONFIG_HOME/sglang-tui/config.toml: read once at start (`load`), and the theme chosen
in the app written back (`save_theme`, handed to the TUI). Parsing is tui/core/settings.py's; the key ids and
clashes are checked against the TUI's action registry, imported only when keys are remapped (`replay` never
loads Textual)."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from tui.core import settings
from tui.core.limits import SETTINGS_MAX, size_words
from tui.core.settings import Settings, SettingsError, with_theme


def config_path(env: dict[str, str] | None = None) -> Path:
    """$XDG_CONFIG_HOME/sglang-tui/config.toml (default ~/.config)."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", os.path.expanduser("~")), ".config")
    return Path(base) / "sglang-tui" / "config.toml"


def keys_problem(keys: Mapping[str, str], clash: bool = True) -> str | None:
    """What is wrong with a [keys] table by the action registry: an id no action has, or (`clash`) a key two actions
    would share (the footer would offer both, and the key would run only one)."""
    from tui.ui.actions import ACTIONS, key_clash

    ids = {a.id for a in ACTIONS if not a.builtin}
    for action_id in keys:
        if action_id not in ids:
            return f"[keys] {action_id}: no action has this id (ids: {', '.join(sorted(ids))})"
    found = key_clash(dict(keys)) if clash else None
    if found is not None:
        key, first, second = found
        return f'[keys] {second} = "{key}" is already the key of {first}: give one of them another'
    return None


def parse(text: str, where: str = "config.toml", *, keys: bool = True) -> Settings:
    """The file's text as Settings, its keys checked against the action registry (a clash only when `keys`: a
    command with no screen, `wait`, is not stopped by two actions on one key) and its theme against Textual's;
    SettingsError names the key."""
    found = settings.parse(text, where, check_keys=partial(keys_problem, clash=keys))
    problem = theme_problem(found.theme)
    if problem is not None:
        raise SettingsError(f"{where}: {problem}")
    return found


def theme_problem(theme: str | None) -> str | None:
    """`theme = "nrod"`: a name no theme has, with the closest one's (Textual's own themes; ctrl+p lists them)."""
    from textual.theme import BUILTIN_THEMES

    if theme is None or theme in BUILTIN_THEMES:
        return None
    import difflib  # only for a wrong name: a probe's every call loads this module (issue 32)

    close = difflib.get_close_matches(theme, sorted(BUILTIN_THEMES), n=1)
    meant = f' (did you mean "{close[0]}"?)' if close else ""
    return f'theme "{theme}" is no theme{meant}; themes: {", ".join(sorted(BUILTIN_THEMES))}'


def load(path: Path | None = None, *, keys: bool = True) -> Settings:
    """The settings file, or the defaults when there is none; SettingsError when it is there but wrong."""
    path = path or config_path()
    text = read_text(path)
    return Settings() if text is None else parse(text, str(path), keys=keys)


def read_text(path: Path) -> str | None:
    """The file's text (None when there is none); SettingsError when it cannot be read, is too large or is not
    UTF-8."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the read, a device never end it
            raise SettingsError(f"{path}: not a regular file; make it one or move it away")
        with open(path, "rb") as f:
            data = f.read(SETTINGS_MAX + 1)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise SettingsError(f"{path}: cannot read it: {err.strerror or err}") from None
    if len(data) > SETTINGS_MAX:
        raise SettingsError(f"{path}: over {size_words(SETTINGS_MAX)}, not a settings file; move it away")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SettingsError(
            f"{path}: not UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start}); save it as UTF-8"
        ) from None


def save_theme(theme: str, path: Path | None = None) -> str | None:
    """Keep a theme chosen in the app (ctrl+p) in the config file, atomically; the problem as one line, or None."""
    path = path or config_path()
    try:
        new = with_theme(read_text(path) or "", theme)
        parse(new, str(path))  # never write a file that would not load
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(new, encoding="utf-8")
        os.replace(tmp, path)
    except (OSError, SettingsError) as err:
        return f"theme not saved to {path}: {err}"
    return None
