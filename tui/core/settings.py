"""Settings from config.toml: key remaps by action id, the theme, and the server's port, log and remote python by
default and per host. Pure: the text in, a frozen value out; reading and writing the file is
tui/commands/settings.py's.

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
read or larger than any settings file (tui.core.limits.SETTINGS_MAX)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import field

from tui.core.record import Record, record

_TOP = {"theme", "defaults", "keys", "hosts"}
_DEFAULTS = {"port": int, "remote_python": str}
_HOST_KEYS = {"port": int, "remote_python": str, "log": str}

KeyCheck = Callable[[Mapping[str, str]], str | None]
"""The problem with a [keys] table (action id -> keys) as words after the file's name, or None: the action
registry's to say (tui/ui/actions.py), handed in by the loader."""


class SettingsError(Exception):
    """The config file is wrong; str() is one line naming the file and the key."""


@record
class Given(Record):
    """The server's port, log and remote python as one source gives them (the command line, [defaults], a
    [hosts."NAME"] table); None: that source does not say."""

    port: int | None = None
    log: str | None = None
    remote_python: str | None = None

    def over(self, under: Given) -> Given:
        """These, and what `under` gives where these say nothing."""
        return Given(
            port=self.port if self.port is not None else under.port,
            log=self.log if self.log is not None else under.log,
            remote_python=self.remote_python if self.remote_python is not None else under.remote_python,
        )


@record
class Settings(Record):
    theme: str | None = None
    keys: Mapping[str, str] = field(default_factory=dict)  # action id -> Textual key spec
    defaults: Given = Given()  # [defaults]: port, remote_python
    hosts: Mapping[str, Given] = field(default_factory=dict)  # [hosts."NAME"]: log, port, remote_python

    def for_host(self, host: str | None) -> Given:
        """What the settings give one HOST (None: several, or none): its own table over [defaults]."""
        own = self.hosts.get(host) if host is not None else None
        return self.defaults if own is None else own.over(self.defaults)


def parse(text: str, where: str = "config.toml", check_keys: KeyCheck | None = None) -> Settings:
    """Settings out of the file's text; the first wrong key raises SettingsError naming it."""
    # the TOML parser only when there is a file: every command reads the settings, a probe exec'd each period too
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover  (3.10: the tomli backport, a dependency there)
        import tomli as tomllib
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
    keys: dict[str, str] = {}
    for action_id, spec in _table(data, "keys", where).items():
        if not isinstance(spec, str) or not spec.strip():
            raise SettingsError(f'{where}: [keys] {action_id} must be a key, e.g. {action_id} = "ctrl+k"')
        keys[action_id] = spec.strip()
    problem = check_keys(keys) if keys and check_keys is not None else None
    if problem is not None:
        raise SettingsError(f"{where}: {problem}")
    defaults = _given(_table(data, "defaults", where), _DEFAULTS, "[defaults]", where)
    hosts: dict[str, Given] = {}
    for host, table in _table(data, "hosts", where).items():
        if not isinstance(table, dict):
            raise SettingsError(f'{where}: hosts.{host} must be a table ([hosts."{host}"])')
        hosts[str(host)] = _given(table, _HOST_KEYS, f'[hosts."{host}"]', where)
    return Settings(theme=theme, keys=keys, defaults=defaults, hosts=hosts)


def _given(table: dict[str, object], kinds: dict[str, type], name: str, where: str) -> Given:
    for key, value in table.items():
        kind = kinds.get(key)
        if kind is None:
            raise SettingsError(f"{where}: {name} {key}: unknown (known: {', '.join(sorted(kinds))})")
        if not isinstance(value, kind) or isinstance(value, bool):
            raise SettingsError(f"{where}: {name} {key} must be a {'number' if kind is int else 'string'}")
        if key == "port" and not 0 < int(str(value)) < 65536:
            raise SettingsError(f"{where}: {name} port {value} is not a TCP port (1-65535)")
    port, log, python = table.get("port"), table.get("log"), table.get("remote_python")
    return Given(
        port=port if isinstance(port, int) else None,
        log=log if isinstance(log, str) else None,
        remote_python=python if isinstance(python, str) else None,
    )


def _table(data: dict[str, object], name: str, where: str) -> dict[str, object]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise SettingsError(f"{where}: {name} must be a table ([{name}])")
    return table


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
