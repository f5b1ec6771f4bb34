"""A broken config.toml is one line and exit 2, never a traceback that reads as a verdict (issue 26, item 7): not
UTF-8, nested 100,000 deep, a FIFO, larger than any settings file. Against a ready simulator, `wait` with such a
file says exit 2 (bad arguments), not 1 (failed), and with the file fixed it says ready."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Sims
from tests.helpers.sim import SimServer, wait_ready
from tui.commands.settings import load, parse
from tui.core.limits import SETTINGS_MAX
from tui.core.settings import SettingsError

BROKEN = {
    "not UTF-8": (b'theme = "\xff\xfe"\n', "not UTF-8 (byte 0xff at offset 9); save it as UTF-8"),
    "nested arrays": (b"a = " + b"[" * 100_000, "nested too deep to read (arrays or tables inside each other)"),
    "nested tables": (b"a = " + b"{a = " * 100_000, "nested too deep to read (arrays or tables inside each other)"),
    "too large": (b"# " + b"x" * SETTINGS_MAX + b"\n", "over 1 MiB, not a settings file; move it away"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_file_is_one_settings_error_naming_the_file(tmp_path: Path, case: str) -> None:
    data, words = BROKEN[case]
    path = tmp_path / "config.toml"
    path.write_bytes(data)
    with pytest.raises(SettingsError) as err:
        load(path)
    assert str(err.value) == f"{path}: {words}"


def test_a_fifo_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    os.mkfifo(path)  # opening it to read would block for ever: nothing writes to it
    said: list[str] = []

    def read() -> None:
        try:
            load(path)
        except SettingsError as err:
            said.append(str(err))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(30)  # the stop condition: a reader blocked in open() never ends by itself
    if reader.is_alive():  # let the blocked open() go, so the test ends
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    assert said == [f"{path}: not a regular file; make it one or move it away"]


def test_deep_text_given_to_parse_is_a_settings_error_too() -> None:
    with pytest.raises(SettingsError, match="nested too deep"):
        parse("a = " + "[" * 2000, "cfg.toml")


@pytest.fixture(scope="module")
def ready_sim(module_sim: Sims) -> SimServer:
    return wait_ready(module_sim(tp=2, shards=4))


@pytest.mark.parametrize("case", ["not UTF-8", "nested tables"])
def test_wait_on_a_ready_server_with_a_broken_config_is_exit_2_in_one_line(
    tmp_path: Path, ready_sim: SimServer, cli: Cli, case: str
) -> None:
    conf = tmp_path / "sglang-tui" / "config.toml"
    conf.parent.mkdir()
    conf.write_bytes(BROKEN[case][0])
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    argv = ("wait", "local", "--port", str(ready_sim.port), "--log", str(ready_sim.log), "--timeout", "60")
    broken = cli(*argv, env=env, timeout=90)
    assert broken.returncode == 2, broken.stderr  # bad arguments: never 1, "failed", for a ready server
    assert broken.stderr.splitlines() == [f"sglang-tui: {conf}: {BROKEN[case][1]}"], broken.stderr
    conf.write_text('theme = "nord"\n')
    fixed = cli(*argv, env=env, timeout=90)
    assert fixed.returncode == 0 and fixed.stderr.splitlines()[-1].startswith("sglang-tui wait: ready"), fixed.stderr
