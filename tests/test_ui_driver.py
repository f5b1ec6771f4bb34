"""The TUI's terminal driver (tui/ui/driver.py) in a real terminal (tmux): keys reach the app, a lone ESC still
closes a dialog (the parser's timeout, with no polling input thread), and `q` ends the app and its input thread."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.processes import Tmux

ROOT = Path(__file__).resolve().parent.parent
SESSION = "sglang-tui-driver"  # on the test's own tmux server (the `tmux` fixture)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (a real terminal)")


def _screen(tmux: Tmux) -> str:
    return tmux("capture-pane", "-p", "-t", SESSION, check=False).stdout


def _until(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def _ours(tmp_path: Path) -> list[int]:
    """The demo's processes: their command lines carry this test's temp dir."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if str(tmp_path).encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
        except OSError:
            pass
    return found


def test_keys_escape_and_quit_in_a_real_terminal(tmp_path: Path, tmux: Tmux) -> None:
    env = f"env XDG_CONFIG_HOME={tmp_path} XDG_STATE_HOME={tmp_path} TMPDIR={tmp_path} TERM=xterm-256color"
    demo = f"{env} {sys.executable} -m tui demo --speed 50; echo EXITED rc=$?; sleep 60"
    tmux("new-session", "-d", "-s", SESSION, "-c", str(ROOT), "-x", "160", "-y", "45", demo)
    try:

        def screen() -> str:
            return _screen(tmux)

        assert _until(lambda: "sglang-tui" in screen() and "quit" in screen(), 90), screen()
        tmux("send-keys", "-t", SESSION, "?")
        assert _until(lambda: "esc closes" in screen(), 30), screen()  # the help screen
        tmux("send-keys", "-t", SESSION, "Escape")
        assert _until(lambda: "esc closes" not in screen(), 30), screen()  # a lone ESC, told apart by its timeout
        tmux("send-keys", "-t", SESSION, "q")
        assert _until(lambda: "EXITED rc=0" in screen(), 30), screen()  # the input thread ended: the app could
    finally:
        tmux("kill-session", "-t", SESSION, check=False)
        for pid in _ours(tmp_path):  # only what this test started: a demo left behind by a failure
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
