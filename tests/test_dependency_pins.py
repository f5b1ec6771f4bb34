"""CONTRIBUTING.md's rule for dependencies: CI installs what a user's `pip install` gets today, so every bound that
holds a dependency back (`==`, `<`, `<=`, `~=`) says on its own line why it is there (issue 29)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # the backport, as tui/commands/toml_tables.py reads it there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
HOLDS_BACK = re.compile(r"(==|<|~=)")


def _requirements() -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    extras = project.get("optional-dependencies", {})
    return [*project["dependencies"], *(req for group in extras.values() for req in group)]


def _bounds(requirement: str) -> str:
    """The version part, markers (`; python_version<'3.11'`) left out: they choose an interpreter, not a release."""
    return requirement.split(";", 1)[0]


def test_every_bound_that_holds_a_dependency_back_says_why_on_its_line() -> None:
    lines = PYPROJECT.read_text().splitlines()
    held = [req for req in _requirements() if HOLDS_BACK.search(_bounds(req))]
    assert held, "no pinned dependency found: the parse of pyproject.toml is off"
    for requirement in held:
        line = next(line for line in lines if f'"{requirement}"' in line)
        why = line.partition("#")[2].strip()
        assert len(why) > 10, f"{requirement}: say why it is held back, on its line (CONTRIBUTING.md)"


def test_the_runtime_dependencies_other_than_textual_take_todays_releases() -> None:
    """The tool's own dependencies have lower bounds only: a user's `pip install` gets today's asyncssh,
    cryptography and httpx, and so does CI (Textual is exact for its drawing: the line says so)."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    held = [req for req in project["dependencies"] if HOLDS_BACK.search(_bounds(req))]
    assert [req.split("=")[0] for req in held] == ["textual"], held
