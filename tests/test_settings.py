"""Settings in $XDG_CONFIG_HOME/sglang-tui/config.toml: key remaps by action id, theme, option defaults; a bad
file is one clear line naming the key (issue 14)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.ui_fakes import FakeBatchSource, FakeControl, make_app
from tui.ui.panes.keybar import KeyBar
from tui.ui.screens.confirm import ConfirmScreen
from tui.ui.settings import SettingsError, config_path, parse

ROOT = Path(__file__).resolve().parent.parent


def test_parse_reads_keys_theme_and_defaults() -> None:
    s = parse('theme = "nord"\n[defaults]\nport = 31000\nremote_python = "/opt/py"\n[keys]\nkill-server = "ctrl+k"\n')
    assert s.theme == "nord" and s.keys == {"kill-server": "ctrl+k"}
    assert s.defaults == {"port": 31000, "remote_python": "/opt/py"}
    assert config_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/sglang-tui/config.toml")


@pytest.mark.parametrize("text, named", [
    ("colour = 1\n", "'colour'"),
    ("[keys]\nfrob = \"x\"\n", "[keys] frob"),
    ("[keys]\nkill-server = 3\n", "[keys] kill-server"),
    ("[defaults]\nport = \"high\"\n", "[defaults] port"),
    ("[defaults]\nport = 70000\n", "[defaults] port 70000"),
    ("[defaults]\nlog = \"x\"\n", "[defaults] log"),
    ("theme = \n", "not valid TOML"),
])  # fmt: skip
def test_a_bad_setting_is_named(text: str, named: str) -> None:
    with pytest.raises(SettingsError) as err:
        parse(text, "cfg.toml")
    assert named in str(err.value) and "\n" not in str(err.value)


def test_cli_says_one_line_for_a_bad_config_and_uses_defaults(tmp_path: Path) -> None:
    conf = tmp_path / "sglang-tui" / "config.toml"
    conf.parent.mkdir()
    conf.write_text("[keys]\nkill = \"k\"\n")
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "tui", "replay", "/dev/null"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "[keys] kill: no action has this id" in done.stderr
    conf.write_text("[defaults]\nport = 31234\n")

    probe = subprocess.run([sys.executable, "-c", (
        "import sys, tui.cli as c\n"
        "import tui.commands.wait as w\n"
        "w.run = lambda args: print('port', args.port) or 0\n"
        "sys.exit(c.main(['wait', 'local']))\n")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and "port 31234" in probe.stdout, probe.stderr


async def test_a_remapped_key_runs_its_action_and_the_footer_shows_it() -> None:
    control = FakeControl()
    app = make_app(FakeBatchSource(), control=control, keymap={"kill-server": "ctrl+k"})
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "ctrl+k" in [h.keys for h in app.query_one(KeyBar).shown]
        await pilot.press("K")
        assert not isinstance(app.screen, ConfirmScreen)  # the old key no longer kills
        await pilot.press("ctrl+k")
        assert isinstance(app.screen, ConfirmScreen)
