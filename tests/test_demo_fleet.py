"""`sglang-tui demo --fleet` in a real terminal (tmux): seven simulated servers start at once, the board opens on
them, and at 80×24, 120×40 and 200×50 the stalled and the failed rows say so within their first 80 columns (the
state first: STALLED, FAILED with its cause); `q` stops every simulator the demo started (real processes, looked
for in /proc by the demo's own directory)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.processes import Tmux
from tests.helpers.sim import ROOT

SESSION = "sglang-tui-demo-fleet"
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (a real terminal)")


def _until(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.3)
    return predicate()


def _row(screen: str, name: str) -> str:
    return next((line for line in screen.splitlines() if line.strip().startswith(name + " ")), "")


def _ours(where: Path) -> list[str]:
    """The command lines of live processes that run from the demo's directory (its simulators name their logs)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            words = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(where) in words and "simulate" in words:
            found.append(words)
    return found


def test_the_demo_fleet_says_stalled_and_failed_first_at_every_size_and_q_stops_it_all(
    tmp_path: Path, tmux: Tmux
) -> None:
    env = (f"env -u COLUMNS -u LINES XDG_CONFIG_HOME={tmp_path} XDG_STATE_HOME={tmp_path} TMPDIR={tmp_path} "
           "TERM=xterm-256color")  # fmt: skip
    demo = f"{env} {sys.executable} -m tui demo --fleet --speed 40 --stall-after 4; echo EXITED rc=$?; sleep 60"
    tmux("new-session", "-d", "-s", SESSION, "-c", str(ROOT), "-x", "80", "-y", "24", demo)

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", SESSION, check=False).stdout

    try:
        assert _until(lambda: len(_ours(tmp_path)) >= 6, 60), screen()  # its simulators run (one is launched late)

        def decided() -> bool:
            shown = screen()
            return (
                "STALLED" in _row(shown, "stuck-cap")[:80] and "FAILED (out of memory)" in _row(shown, "oom-load")[:80]
            )

        for width, height in ((80, 24), (120, 40), (200, 50)):
            tmux("resize-window", "-t", SESSION, "-x", str(width), "-y", str(height))
            assert _until(decided, 150), screen()
            shown = screen()
            assert "1 stalled" in shown.splitlines()[0] and "1 failed" in shown.splitlines()[0], shown
            assert "ready" not in _row(shown, "oom-load") and "serving" not in _row(shown, "stuck-cap")

        tmux("send-keys", "-t", SESSION, "q")
        assert _until(lambda: "EXITED rc=0" in screen(), 60), screen()
        assert "7 simulated servers stopped" in screen()
        assert _ours(tmp_path) == []  # none of the demo's simulators is left
    finally:
        tmux("kill-session", "-t", SESSION, check=False)
