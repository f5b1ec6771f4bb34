"""README.md stays true: its key table is the registry's and every key a binding; every command and option it names
is the CLI's (the parser built in process); its exit codes are the commands' own; its settings example loads; its
test command is the one .ci/run runs; and it stays short (figures live in bench/RESULTS.md)."""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

import pytest

from tui.cli import SUBCOMMANDS, build_parser, subcommand_parsers
from tui.core.settings import Given
from tui.sim.params import FAULTS
from tui.ui.actions import ACTIONS, key_table_markdown

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
MAX_LINES = 250
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# Options README names that belong to other programs, each with the program.
FOREIGN = {
    "--check": "ruff format --check, in the test command",
    "--quick": "bench/bench_all.py's, in the test command",
    "--no-write": "bench/bench_all.py's, in the test command",
}


def parsers() -> dict[str, argparse.ArgumentParser]:
    return subcommand_parsers(build_parser())


def options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string the parser accepts as written (argparse has no public way to list them)."""
    return {s for action in parser._actions for s in action.option_strings}


def section(title: str) -> str:
    """README's text under a `#`/`##`/`###` heading, up to the next heading of any level."""
    match = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#+ |\Z)", README, re.M | re.S)
    assert match, f"README has no section {title!r}"
    return match.group(1)


def blocks(text: str) -> tuple[list[tuple[str, str]], str]:
    """([(language, body)] of the fenced blocks, the text outside them)."""
    found: list[tuple[str, str]] = []
    outside: list[str] = []
    fence: tuple[str, list[str]] | None = None
    for line in text.splitlines():
        if fence is None and line.startswith("```"):
            fence = (line[3:].strip(), [])
        elif fence is not None and line.startswith("```"):
            found.append((fence[0], "\n".join(fence[1]) + "\n"))
            fence = None
        elif fence is not None:
            fence[1].append(line)
        else:
            outside.append(line)
    assert fence is None, "README has a fenced block that is never closed"
    return found, "\n".join(outside)


def usage_block() -> list[str]:
    """The lines of the first plain fenced block under "## Use" (the synopsis of every command)."""
    plain = [body for language, body in blocks(section("Use"))[0] if not language]
    assert plain, "README's Use section has no plain ``` block"
    return plain[0].splitlines()


def entries(lines: list[str], starts: re.Pattern[str]) -> list[tuple[str, str]]:
    """(first line, its text with the indented lines under it) for each line that `starts` matches."""
    out: list[tuple[str, str]] = []
    for line in lines:
        if starts.match(line):
            out.append((line, line))
        elif out and line.startswith(" "):
            out[-1] = (out[-1][0], out[-1][1] + "\n" + line)
        elif not line.startswith(" "):
            out.append(("", ""))  # a line of another kind ends the entry above
    return [(head, text) for head, text in out if head]


def command_of(words: list[str]) -> str | None:
    """The subcommand a command line runs: `sglang-tui CMD …` or `CMD …` (a command word first), the TUI for
    `sglang-tui HOST …`; None for a line that is no sglang-tui command."""
    if not words:
        return None
    if words[0] == "sglang-tui":
        return words[1] if len(words) > 1 and words[1] in SUBCOMMANDS else "watch"
    return words[0] if words[0] in SUBCOMMANDS else None


def command_lines() -> list[tuple[str, str]]:
    """(subcommand, the command line) for every sglang-tui command README shows outside the synopsis: the lines
    of its sh blocks and its inline code spans."""
    fenced, prose = blocks(README)
    shown = [line.split("#", 1)[0] for language, body in fenced if language == "sh" for line in body.splitlines()]
    shown += [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]
    out = []
    for line in shown:
        command = command_of(line.split())
        if command is not None:
            out.append((command, line.split("|", 1)[0]))
    return out


def test_readme_stays_short() -> None:
    lines = README.count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines (at most {MAX_LINES}): figures go to bench/RESULTS.md"


def test_readme_links_the_results_file() -> None:
    assert "bench/RESULTS.md" in README and (ROOT / "bench" / "RESULTS.md").is_file()


def test_the_synopsis_names_every_command_and_only_commands() -> None:
    named = {command_of(head.split()) for head, _ in entries(usage_block(), re.compile(r"sglang-tui "))}
    assert named == set(parsers()), (named, set(parsers()))
    assert set(SUBCOMMANDS) | {"watch"} == set(parsers())  # main's dispatch knows every subparser


def test_every_option_of_a_synopsis_line_is_accepted_by_its_command() -> None:
    found = entries(usage_block(), re.compile(r"sglang-tui "))
    assert len(found) >= len(parsers())
    for head, text in found:
        command = command_of(head.split())
        assert command is not None
        unknown = sorted(set(OPTION.findall(text)) - options(parsers()[command]))
        assert not unknown, f"`{head.strip()}`: {command} does not accept {unknown}"


def test_every_option_group_is_accepted_by_each_command_it_names() -> None:
    groups = entries(usage_block(), re.compile(r"[\w ]+ options \(([^)]*)\):$"))
    assert len(groups) >= 2, "README's synopsis lost its option groups"
    for head, text in groups:
        names = re.search(r"\(([^)]*)\)", head).group(1)
        commands = ["watch" if n.strip() == "HOST" else n.strip() for n in names.split(",")]
        assert set(commands) <= set(parsers()), head
        listed = set(OPTION.findall(text))
        assert listed, head
        for command in commands:
            unknown = sorted(listed - options(parsers()[command]))
            assert not unknown, f"{head!r}: {command} does not accept {unknown}"


def test_every_option_of_a_shown_command_line_is_accepted_by_that_command() -> None:
    shown = command_lines()
    assert len(shown) >= 10, shown  # the typical-use block and the spans of every section
    for command, line in shown:
        unknown = sorted(set(OPTION.findall(line)) - options(parsers()[command]))
        assert not unknown, f"`{line.strip()}`: {command} does not accept {unknown}"


def test_every_option_readme_names_is_an_option_of_the_cli() -> None:
    every = set().union(*(options(p) for p in parsers().values())) | options(build_parser())
    unknown = sorted(set(OPTION.findall(README)) - every - set(FOREIGN))
    assert not unknown, f"README names options no command accepts: {unknown}"
    assert set(FOREIGN) <= set(OPTION.findall(README)), "drop the FOREIGN entries README no longer names"


def test_the_faults_readme_lists_are_the_simulators() -> None:
    match = re.search(r"^faults: (.*?)(?=^\S|\Z)", "\n".join(usage_block()) + "\n", re.M | re.S)
    assert match, "README's synopsis lost its faults line"
    assert set(re.findall(r"[a-z][a-z-]+", match.group(1))) == set(FAULTS)


def test_the_exit_codes_are_the_one_table() -> None:
    """README's table is tui/core/exitcodes.py's: each code's meaning, and exactly the commands that give it."""
    from tui.core.exitcodes import MEANING, USES

    rows = re.findall(r"^\| (\d+) \| (.*?) \| (.*) \|$", section("Exit codes"), re.M)
    assert {int(code) for code, _, _ in rows} == set(MEANING), rows
    for code, meaning, given_by in rows:
        assert meaning.startswith(MEANING[int(code)].split(" /")[0]), (code, meaning, MEANING[int(code)])
        said = set(re.findall(r"`(\w+)`", given_by))
        assert said == {command for command, codes in USES.items() if int(code) in codes}, (code, said)


def test_every_code_a_command_returns_is_in_its_row_of_the_table() -> None:
    """The EXIT_ constants each command's modules use (tui/commands/COMMAND*.py) are codes the table gives it."""
    from tui.core.exitcodes import EXIT_INTERRUPTED, USES

    commands = ROOT / "tui" / "commands"
    for command, codes in USES.items():
        for path in sorted(commands.glob(f"{command}*.py")):
            module = importlib.import_module(f"tui.commands.{path.stem}")
            used = {v for k, v in vars(module).items() if k.startswith("EXIT_") and isinstance(v, int)}
            assert used - {EXIT_INTERRUPTED} <= set(codes), f"{path.name}: {sorted(used)}; the table: {sorted(codes)}"


def said(given: Given) -> dict[str, object]:
    """The options a settings table sets (the rest it leaves to the command line and the defaults)."""
    return {k: v for k, v in vars(given).items() if v is not None}


def test_the_settings_example_loads_as_it_reads() -> None:
    from tui.commands.settings import parse

    example = re.search(r"^```toml\n(.*?)^```", section("Settings"), re.M | re.S)
    assert example, "README's Settings section has no toml example"
    settings = parse(example.group(1))
    ids = {a.id for a in ACTIONS}
    dests = {a.dest for p in parsers().values() for a in p._actions}
    assert settings.keys and set(settings.keys) <= ids
    assert settings.defaults != Given() and set(said(settings.defaults)) <= dests
    assert settings.hosts and all(said(h) and set(said(h)) <= dests for h in settings.hosts.values())


def test_readme_key_table_is_generated_from_the_action_registry() -> None:
    assert key_table_markdown().strip() in README


def test_every_key_in_readme_key_table_is_bound_to_an_action_of_the_app() -> None:
    from tui.ui.app import SglangTui

    rows = re.findall(r"^\| (`.+?`) \| .+? \| `([\w-]+)` \| (?:yes)? \|$", section("Keys"), re.M)
    assert len(rows) == len(ACTIONS), f"README's key table has {len(rows)} rows, the registry {len(ACTIONS)}"
    bound = {b.id: b for b in SglangTui.BINDINGS if hasattr(b, "id")}
    names = {"?": "question_mark", "/": "slash"}
    for keys, action_id in rows:
        typed = [names.get(k, k) for k in re.findall(r"`([^`]+)`", keys)]
        if action_id == "command-palette":  # bound by Textual itself
            assert typed == [SglangTui.COMMAND_PALETTE_BINDING]
            continue
        assert action_id in bound, f"README lists {keys} ({action_id}), which the app does not bind"
        binding = bound[action_id]
        assert typed == binding.key.split(","), (keys, binding.key)
        assert callable(getattr(SglangTui, f"action_{binding.action.split('(')[0]}", None)), binding


def test_readme_and_ci_run_the_same_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q -e '.[test]'" in README and "pip install -q -e '.[test]'" in ci
    assert "-m pytest -q" in README and "-m pytest -q" in ci
    assert "openssh-server" in README and "openssh-server" in ci
    assert "tmux" in README and "need+=(tmux)" in ci  # tests/test_ui_driver.py needs a real terminal
    assert "socat" in README and "need+=(socat)" in ci  # tests/test_verdicts_round2.py: a real forwarder


@pytest.mark.parametrize("where", ["README.md", ".ci/run"])
def test_readme_and_ci_run_lint_types_and_import_contracts_before_the_tests(where: str) -> None:
    text = (ROOT / where).read_text()
    steps = [
        ".venv/bin/ruff check .",
        ".venv/bin/ruff format --check .",
        ".venv/bin/mypy",
        ".venv/bin/lint-imports",
        "bench/bench_all.py --quick --no-write",  # every bench still runs (issue 29)
        "-m pytest -q",
    ]
    found = [text.find(step) for step in steps]
    assert -1 not in found and found == sorted(found), (steps, found)
