"""Settings from $XDG_CONFIG_HOME/sglang-tui/config.toml: key remaps by action id, the theme, option defaults.

    theme = "nord"
    [defaults]
    port = 30000
    remote_python = "/opt/sglang/.venv/bin/python"
    [keys]
    kill-server = "ctrl+k"     # an action id from the key table; several keys: "x,ctrl+x"
    [hosts."gpu-node-7"]       # per host (as typed on the command line): its log, port, remote python
    log = "/data/sglang/server.log"
    port = 30001

A bad file gives one line naming the key (SettingsError), and so does one that is not UTF-8, nested too deep to
read or larger than any settings file (tui.core.limits.SETTINGS_MAX); parsing is pure, reading the file is `load`."""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tui.core.limits import SETTINGS_MAX, size_words

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover  (3.10: the tomli backport, a dependency there)
    import tomli as tomllib

_TOP = {"theme", "defaults", "keys", "hosts"}
_DEFAULTS = {"port": int, "remote_python": str}
_HOST_KEYS = {"port": int, "remote_python": str, "log": str}


class SettingsError(Exception):
    """The config file is wrong; str() is one line naming the file and the key."""


@dataclass(frozen=True)
class Settings:
    theme: str | None = None
    keys: dict[str, str] = field(default_factory=dict)  # action id -> Textual key spec
    defaults: dict[str, object] = field(default_factory=dict)  # option dest (port, remote_python) -> value
    hosts: dict[str, dict[str, object]] = field(default_factory=dict)  # host -> {log, port, remote_python}


def config_path(env: dict[str, str] | None = None) -> Path:
    """$XDG_CONFIG_HOME/sglang-tui/config.toml (default ~/.config)."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", os.path.expanduser("~")), ".config")
    return Path(base) / "sglang-tui" / "config.toml"


def parse(text: str, where: str = "config.toml") -> Settings:
    """Settings out of the file's text; the first wrong key raises SettingsError naming it."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise SettingsError(f"{where}: not valid TOML: {err}") from None
    except RecursionError:  # arrays or inline tables nested hundreds deep: no settings file is
        raise SettingsError(f"{where}: nested too deep to read (arrays or tables inside each other)") from None
    for key in data:
        if key not in _TOP:
            raise SettingsError(f"{where}: unknown setting {key!r} (known: {', '.join(sorted(_TOP))})")
    theme = data.get("theme")
    if theme is not None and (not isinstance(theme, str) or not theme):
        raise SettingsError(f'{where}: theme must be a theme\'s name, e.g. theme = "nord"')
    keys = _table(data, "keys", where)
    from tui.ui.actions import ACTIONS, key_clash  # only when keys are remapped: `replay` never loads Textual

    ids = {a.id for a in ACTIONS if not a.builtin} if keys else set()
    for action_id, spec in keys.items():
        if action_id not in ids:
            raise SettingsError(f"{where}: [keys] {action_id}: no action has this id (ids: {', '.join(sorted(ids))})")
        if not isinstance(spec, str) or not spec.strip():
            raise SettingsError(f'{where}: [keys] {action_id} must be a key, e.g. {action_id} = "ctrl+k"')
    clash = key_clash({k: str(v) for k, v in keys.items()}) if keys else None
    if clash is not None:  # two actions on one key: the footer would offer both, and the key would run only one
        key, first, second = clash
        raise SettingsError(
            f'{where}: [keys] {second} = "{key}" is already the key of {first}: give one of them another'
        )
    defaults = _table(data, "defaults", where)
    _check_values(defaults, _DEFAULTS, "[defaults]", where)
    hosts: dict[str, dict[str, object]] = {}
    for host, table in _table(data, "hosts", where).items():
        if not isinstance(table, dict):
            raise SettingsError(f'{where}: hosts.{host} must be a table ([hosts."{host}"])')
        _check_values(table, _HOST_KEYS, f'[hosts."{host}"]', where)
        hosts[str(host)] = dict(table)
    return Settings(
        theme=theme, keys={k: str(v).strip() for k, v in keys.items()}, defaults=dict(defaults), hosts=hosts
    )


def _check_values(table: dict[str, object], kinds: dict[str, type], name: str, where: str) -> None:
    for key, value in table.items():
        kind = kinds.get(key)
        if kind is None:
            raise SettingsError(f"{where}: {name} {key}: unknown (known: {', '.join(sorted(kinds))})")
        if not isinstance(value, kind) or isinstance(value, bool):
            raise SettingsError(f"{where}: {name} {key} must be a {'number' if kind is int else 'string'}")
        if key == "port" and not 0 < int(str(value)) < 65536:
            raise SettingsError(f"{where}: {name} port {value} is not a TCP port (1-65535)")


def _table(data: dict[str, object], name: str, where: str) -> dict[str, object]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise SettingsError(f"{where}: {name} must be a table ([{name}])")
    return table


def load(path: Path | None = None) -> Settings:
    """The settings file, or the defaults when there is none; SettingsError when it is there but wrong."""
    path = path or config_path()
    text = read_text(path)
    return Settings() if text is None else parse(text, str(path))


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


def with_theme(text: str, theme: str) -> str:
    """The config text with its top-level `theme` set (replaced in place, else added first); the rest kept."""
    line = f"theme = {_toml_string(theme)}"
    lines = text.splitlines()
    for i, old in enumerate(lines):
        stripped = old.strip()
        if stripped.startswith("["):  # the first table: top-level keys end here
            break
        if stripped.split("=", 1)[0].strip() == "theme" and "=" in stripped:
            lines[i] = line
            return "\n".join(lines) + "\n"
    return "\n".join([line, *lines]) + "\n"


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


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


def host_overrides(settings: Settings, host: str | None, argv: list[str]) -> dict[str, object]:
    """The host's own settings ([hosts."NAME"]) for what the command line did not say: --log, --port,
    --remote-python (over [defaults]). host: the one HOST watched (None for several)."""
    entry = settings.hosts.get(host) if host is not None else None
    out: dict[str, object] = {}
    for key, value in (entry or {}).items():
        flag = "--" + key.replace("_", "-")
        if not any(a == flag or a.startswith(flag + "=") for a in argv):
            out[key] = value
    return out
