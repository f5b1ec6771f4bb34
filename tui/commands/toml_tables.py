"""A TOML file of [[TABLE]] entries (`--deployment`, `--inventory`), read strictly: each problem one line that
names the file's flag and the key (ValueError, exit 2)."""

from __future__ import annotations

import difflib
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover  (Python 3.10)
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]


def read_toml(path: str, where: str) -> dict[str, object]:
    """The file's data; `where` (e.g. "--deployment FILE") starts the line of a file that cannot be read."""
    try:
        with open(path, "rb") as handle:
            data: dict[str, object] = tomllib.load(handle)
    except OSError as err:
        raise ValueError(f"{where}: cannot read it ({err.strerror or err})") from None
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{where}: not valid TOML ({err})") from None
    return data


def entries(data: dict[str, object], where: str, table: str, fields: str) -> list[object]:
    """The [[table]] (or [[tables]]) list: no other top-level key, not both spellings, at least one entry."""
    plural = f"{table}s"
    extra = sorted(set(data) - {table, plural})
    if extra:
        raise ValueError(
            f"{where}: unknown top-level key {extra[0]!r}{hint(extra[0], (table,))}; use [[{table}]] tables"
        )
    if table in data and plural in data:
        raise ValueError(f"{where}: both [[{table}]] and [[{plural}]]: use one")
    found = data.get(table, data.get(plural))
    if not isinstance(found, list) or not found:
        raise ValueError(f"{where}: no {plural}; add [[{table}]] tables with {fields}")
    return found


def hint(key: str, known: tuple[str, ...]) -> str:
    """ " (did you mean 'port'?)" for a key close to a known one; else ""."""
    close = difflib.get_close_matches(key, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
