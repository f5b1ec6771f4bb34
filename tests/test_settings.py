"""Settings in $XDG_CONFIG_HOME/sglang-tui/config.toml: key remaps by action id, theme, option defaults; a bad
file is one clear line naming the key (issue 14)."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Spawner
from tests.helpers.ui_fakes import FakeBatchSource, FakeControl, make_app, until
from tui.commands.settings import config_path, parse, save_theme
from tui.core.settings import Given, SettingsError, with_theme
from tui.core.settings import parse as core_parse
from tui.ui.panes.keybar import KeyBar
from tui.ui.screens.confirm import ConfirmScreen

ROOT = Path(__file__).resolve().parent.parent


def test_parse_reads_keys_theme_and_defaults() -> None:
    s = parse('theme = "nord"\n[defaults]\nport = 31000\nremote_python = "/opt/py"\n[keys]\nkill-server = "ctrl+k"\n')
    assert s.theme == "nord" and s.keys == {"kill-server": "ctrl+k"}
    assert s.defaults == Given(port=31000, remote_python="/opt/py")
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


@pytest.mark.parametrize("keys, named", [
    ('kill-server = "q"', '[keys] kill-server = "q" is already the key of quit'),
    ('kill-server = "?"', '[keys] kill-server = "?" is already the key of help'),
    ('wrap = "x"\nkill-server = "x"', '[keys] kill-server = "x" is already the key of wrap'),
    ('copy = "ctrl+s"', '[keys] copy = "ctrl+s" is already the key of save-log'),
    ('kill-server = "ctrl+p"', '[keys] kill-server = "ctrl+p" is already the key of command-palette'),
])  # fmt: skip
def test_a_key_two_actions_would_share_is_refused_naming_both(keys: str, named: str) -> None:
    with pytest.raises(SettingsError) as err:
        parse(f"[keys]\n{keys}\n", "cfg.toml")
    assert str(err.value).startswith(f"cfg.toml: {named}") and "\n" not in str(err.value)


def test_keys_moved_out_of_each_others_way_are_fine() -> None:
    assert parse('[keys]\nkill-server = "q"\nquit = "x"\n').keys == {"kill-server": "q", "quit": "x"}
    assert parse('[keys]\nkill-server = "ctrl+k"\n').keys == {"kill-server": "ctrl+k"}


def test_cli_says_one_line_for_a_bad_config_and_uses_defaults(tmp_path: Path, cli: Cli) -> None:
    conf = tmp_path / "sglang-tui" / "config.toml"
    conf.parent.mkdir()
    conf.write_text('[keys]\nkill = "k"\n')
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path))
    done = cli("replay", "/dev/null", timeout=60, env=env)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "[keys] kill: no action has this id" in done.stderr
    conf.write_text("[defaults]\nport = 31234\n")

    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "import sys, tui.cli as c\n"
                "import tui.commands.wait as w\n"
                "w.run = lambda opts: print('port', opts.server.port) or 0\n"
                "sys.exit(c.main(['wait', 'local']))\n"
            ),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
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


async def test_the_help_shows_the_remapped_key() -> None:
    from tui.ui.screens.help import HelpScreen

    app = make_app(FakeBatchSource(), control=FakeControl(), keymap={"kill-server": "ctrl+k", "help": "f2"})
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("f2")
        assert isinstance(app.screen, HelpScreen)
        rows = [line for line in app.screen.shown.splitlines() if "Kill" in line or "kill" in line]
        assert any("ctrl+k" in line for line in rows), rows
        assert "r, T and ctrl+k ask first" in app.screen.shown
        assert not any(line.lstrip().startswith("K ") for line in rows), rows  # the old key is not offered


async def test_save_log_and_copy_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ctrl+s saves under the state directory, never the cwd (issue 23), and C's report is saved there too."""
    from tests.helpers.ui_fakes import FakeClock, play, startup_failed_oom

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await play(pilot, source, clock, startup_failed_oom())
        await pilot.press("ctrl+s")
        assert app.last_saved is not None and app.last_saved.parent == tmp_path / "state" / "sglang-tui" / "logs"
        assert list(tmp_path.glob("*.log")) == []
        saved = app.last_saved.read_text().splitlines()
        assert saved == [line.text for line in app.log_pane.view.lines] and any("OutOfMemoryError" in t for t in saved)
        await pilot.press("C")
        report = app.clipboard
        assert app.last_copied is not None and app.last_copied.read_text() == report
        assert report.startswith("## sglang-tui: gpu-node-7") and "**FAILED**" in report
        assert "### Root cause: ✗ OUT OF MEMORY (out of memory)" in report and "| CUDA graph capture |" in report


def test_desktop_notifications_pick_the_terminals_escape_and_strip_log_escapes() -> None:
    from tui.ui.notify import osc_notification

    body = "failed\x1b]52;c;evil\x07 now"
    assert (
        osc_notification({"TERM_PROGRAM": "iTerm.app"}, "gpu1: failed", body)
        == "\x1b]9;gpu1: failed: failed ]52;c;evil  now\x07"
    )
    wez = osc_notification({"TERM_PROGRAM": "WezTerm"}, "a;b", "ok")
    assert wez == "\x1b]777;notify;a,b;ok\x07"
    assert osc_notification({"TERM_PROGRAM": "WezTerm", "TMUX": "/tmp/t,1,0"}, "t", "b") is None
    assert osc_notification({"TERM": "xterm-256color"}, "t", "b") is None


def test_with_theme_replaces_or_adds_the_top_level_key_and_keeps_the_rest() -> None:
    text = 'theme = "nord"\n[defaults]\nport = 31000\n[keys]\nkill-server = "ctrl+k"\n'
    assert with_theme(text, "gruvbox") == text.replace('"nord"', '"gruvbox"')
    added = with_theme("[defaults]\nport = 31000\n", "dracula")
    assert added.startswith('theme = "dracula"\n') and parse(added).defaults == Given(port=31000)
    assert core_parse(with_theme("", 'odd"name')).theme == 'odd"name'  # quoted as TOML (no theme has the name)


async def test_a_theme_chosen_in_the_app_sticks_in_the_config_file(tmp_path: Path) -> None:
    """The palette sets App.theme; the config file (a real file) then holds it, other settings kept; next start
    reads it back."""
    path = tmp_path / "sglang-tui" / "config.toml"
    path.parent.mkdir()
    path.write_text('[defaults]\nport = 31000\n[keys]\nkill-server = "ctrl+k"\n', encoding="utf-8")
    app = make_app(FakeBatchSource(), control=FakeControl(), keep_theme=partial(save_theme, path=path))
    async with app.run_test() as pilot:
        chosen = next(name for name in app.available_themes if name != app.theme)
        app.theme = chosen
        await until(pilot, lambda: chosen in path.read_text(encoding="utf-8"), what="the theme in the config file")
    settings = parse(path.read_text(encoding="utf-8"))
    assert settings.theme == chosen
    assert settings.defaults == Given(port=31000) and settings.keys == {"kill-server": "ctrl+k"}


async def test_without_a_theme_file_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    app = make_app(FakeBatchSource(), control=FakeControl())
    async with app.run_test() as pilot:
        app.theme = next(name for name in app.available_themes if name != app.theme)
        await pilot.pause(0.2)
    assert not config_path().exists()


def _args_seen(spawn: Spawner, env: dict[str, str], argv: list[str]) -> str:
    """What `wait` would be run with after the settings: its log, port and remote python (printed)."""
    code = (
        "import sys, tui.cli as c\n"
        "import tui.commands.wait as w\n"
        "w.run = lambda opts: print('seen', opts.server.log, opts.server.port, opts.server.remote_python) or 0\n"
        f"sys.exit(c.main({argv!r}))\n"
    )
    done = spawn.run([sys.executable, "-c", code], cwd=ROOT, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_hosts_own_log_port_and_python_apply_unless_the_command_line_says_otherwise(
    tmp_path: Path, spawn: Spawner
) -> None:
    conf = tmp_path / "sglang-tui" / "config.toml"
    conf.parent.mkdir()
    conf.write_text(
        '[defaults]\nport = 31000\n[hosts."gpu-node-7"]\nlog = "/data/sglang.log"\nport = 30001\n'
        'remote_python = "/opt/py/bin/python"\n'
    )
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path))
    assert _args_seen(spawn, env, ["wait", "gpu-node-7"]) == "seen /data/sglang.log 30001 /opt/py/bin/python"
    assert _args_seen(spawn, env, ["wait", "gpu-node-7", "--log", "/x.log", "--port=4"]) == (
        "seen /x.log 4 /opt/py/bin/python"
    )
    assert _args_seen(spawn, env, ["wait", "other-host"]) == "seen None 31000 python3"  # [defaults] only


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[hosts."h"]\nlogg = "/x"\n', '[hosts."h"] logg: unknown'),
        ('[hosts."h"]\nport = "x"\n', '[hosts."h"] port must be a number'),
        ("[hosts]\nh = 3\n", "hosts.h must be a table"),
    ],
)
def test_a_bad_host_setting_is_named(text: str, named: str) -> None:
    with pytest.raises(SettingsError) as err:
        parse(text)
    assert named in str(err.value)
