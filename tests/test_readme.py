"""README.md stays true: its key table is the registry's, and its test command is the one .ci/run runs."""

from __future__ import annotations

from pathlib import Path

from tui.ui.actions import key_table_markdown

ROOT = Path(__file__).resolve().parent.parent


def test_readme_key_table_is_generated_from_the_action_registry() -> None:
    assert key_table_markdown().strip() in (ROOT / "README.md").read_text()


def test_readme_and_ci_run_the_same_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q -e '.[test]'" in readme and "pip install -q -e '.[test]'" in ci
    assert "-m pytest -q" in readme and "-m pytest -q" in ci
    assert "openssh-server" in readme and "openssh-server" in ci
    assert "tmux" in readme and "need+=(tmux)" in ci  # tests/test_ui_driver.py needs a real terminal


def test_readme_and_ci_run_lint_types_and_import_contracts_before_the_tests() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    steps = [
        ".venv/bin/ruff check .",
        ".venv/bin/ruff format --check .",
        ".venv/bin/mypy",
        ".venv/bin/lint-imports",
        "-m pytest -q",
    ]
    for text in (readme, ci):
        where = [text.find(step) for step in steps]
        assert -1 not in where and where == sorted(where), (steps, where)
