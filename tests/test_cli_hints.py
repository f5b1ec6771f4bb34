"""A misspelt option gets the one meant (`--prot`: did you mean --port; `probe --redy` names --ready though argparse
first misses --ready or --alive); a theme no theme has is refused at start with the closest name; a [keys] clash
stops the commands whose screens read keys, never headless `wait` (a real simulator, ready, is waited on)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Sims
from tests.helpers.sim import SimServer
from tui.commands.settings import theme_problem


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("wait", "local", "--prot", "39401"), "unrecognized arguments: --prot 39401 (did you mean --port?)"),
        (("probe", "local", "--redy"), "(--redy: did you mean --ready?)"),
        (("fleet", "--once", "--inventry", "x.toml"), "(did you mean --inventory?)"),
    ],
)
def test_a_misspelt_option_names_the_one_meant(cli: Cli, argv: tuple[str, ...], words: str) -> None:
    done = cli(*argv)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], done.stderr


def test_a_theme_no_theme_has_is_refused_with_the_closest() -> None:
    assert theme_problem("nord") is None and theme_problem(None) is None
    problem = theme_problem("nrod")
    assert problem is not None and problem.startswith('theme "nrod" is no theme (did you mean "nord"?)')


def test_the_bad_theme_is_one_line_at_start(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "sglang-tui" / "config.toml"
    conf.parent.mkdir()
    conf.write_text('theme = "nrod"\n')
    done = cli("wait", "local", "--port", "1", "--timeout", "1", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f'sglang-tui: {conf}: theme "nrod" is no theme (did you mean "nord"?); '
                                        f"themes: {done.stderr.split('themes: ', 1)[1].strip()}"]  # fmt: skip


def test_a_keys_clash_does_not_stop_headless_wait(cli: Cli, sim: Sims, tmp_path: Path) -> None:
    server: SimServer = sim(speed=100.0, shards=4, tp=2, speculative="none")
    conf = tmp_path / "sglang-tui" / "config.toml"
    conf.parent.mkdir()
    conf.write_text('[keys]\nkill-server = "q"\n')  # q is quit's: the TUI refuses it, wait has no keys
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    waited = cli("wait", "local", "--port", str(server.port), "--log", str(server.log), "--timeout", "120",
                 "--no-history", env=env, timeout=150)  # fmt: skip
    assert waited.returncode == 0, waited.stderr
    board = cli("demo", "--speed", "100", env=env)  # a screen that reads keys: the clash is its one line
    assert board.returncode == 2 and "is already the key of quit" in board.stderr, board.stderr
