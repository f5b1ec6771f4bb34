"""The TUI's header says what is missing (issue 23, item 7), in a real terminal (tmux) at 80×24 and 200×50: a
missing log is LOG MISSING with its path, not STARTING; no log and nothing listening is NOTHING LISTENS."""

from __future__ import annotations

import shlex
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.processes import Tmux
from tests.helpers.sim import ROOT
from tests.helpers.sshd import free_port

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (a real terminal)")


def header_when(tmux: Tmux, words: tuple[str, ...], limit: float = 90.0) -> list[str]:
    """The screen's first three rows (the header) once they hold every one of `words`."""
    deadline = time.monotonic() + limit
    rows: list[str] = []
    while time.monotonic() < deadline:
        rows = tmux("capture-pane", "-p", "-t", "tui").stdout.splitlines()[:3]
        if all(any(w in row for row in rows) for w in words):
            return rows
        time.sleep(0.2)
    raise AssertionError(f"not within {limit:g} s: {words}; the header was:\n" + "\n".join(rows))


def quit_tui(tmux: Tmux, limit: float = 60.0) -> None:
    """`q`, then wait until the TUI has left (its session ends with it): a TUI whose terminal is killed under it
    is not left behind."""
    tmux("send-keys", "-t", "tui", "q")
    deadline = time.monotonic() + limit
    while tmux("has-session", "-t", "tui", check=False).returncode == 0:
        if time.monotonic() > deadline:
            raise AssertionError(f"the TUI did not quit within {limit:g} s of q")
        time.sleep(0.2)


def start(tmux: Tmux, size: tuple[int, int], *args: str) -> None:
    # tmux hands its panes COLUMNS=80 LINES=24 here, and Rich takes those over the terminal's own size
    command = shlex.join(["env", "-u", "COLUMNS", "-u", "LINES", sys.executable, "-m", "tui", "local", *args])
    tmux("new-session", "-d", "-s", "tui", "-c", str(ROOT), "-x", str(size[0]), "-y", str(size[1]), command)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_a_missing_log_is_the_headline(tmux: Tmux, tmp_path: Path, size: tuple[int, int]) -> None:
    log, port = tmp_path / "typo.log", free_port()
    start(tmux, size, "--port", str(port), "--log", str(log))
    said = f"log file missing: {log}; nothing listens on port {port}"
    rows = header_when(tmux, ("LOG MISSING", "log file missing: ") + ((said,) if size[0] >= 200 else ()))
    assert not any("STARTING" in row for row in rows)
    quit_tui(tmux)


def test_no_log_and_nothing_listening_is_the_headline(tmux: Tmux) -> None:
    port = free_port()
    start(tmux, (200, 50), "--port", str(port))
    header_when(tmux, ("NOTHING LISTENS", f"nothing listens on port {port} and no log was given"))
    quit_tui(tmux)
