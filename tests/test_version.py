"""The version is written once (pyproject.toml); the package and `sglang-tui --version` read it from there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tui
from tui.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_version_comes_from_pyproject(capsys: pytest.CaptureFixture[str]) -> None:
    written = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert written is not None
    assert tui.__version__ == written.group(1)
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"sglang-tui {written.group(1)}"
