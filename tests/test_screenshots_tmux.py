"""Regenerates screenshots/tmux/*.txt (-m screenshots): `sglang-tui demo` in a real terminal (tmux) as a newcomer
runs it, each state captured at 80×24, 120×40 and 200×50 (the window resized between captures): loading its
weights, CUDA graph capture, `K`'s dialog, STOPPED after `y`; and `demo --fault oom-capture` FAILED. The digest of
the code that draws them is written beside them (DRAWN_BY): tests/test_screenshots_fresh.py fails once that code
changed and the captures were not made again."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.processes import Tmux
from tests.helpers.sim import ROOT
from tests.test_screenshots_fresh import CAPTURES, DRAWN_BY, drawing_digest

SIZES = ((80, 24), (120, 40), (200, 50))
SESSION = "sglang-tui-captures"
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (a real terminal)")


def _until(predicate: Callable[[], bool], timeout: float, what: str, screen: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"never: {what}\n{screen()}")


def _demo(tmux: Tmux, tmp_path: Path, *options: str) -> Callable[[], str]:
    env = (f"env -u COLUMNS -u LINES XDG_CONFIG_HOME={tmp_path} XDG_STATE_HOME={tmp_path} TMPDIR={tmp_path} "
           "TERM=xterm-256color")  # fmt: skip
    line = f"{env} {sys.executable} -m tui demo {' '.join(options)}; echo DEMO-EXITED; sleep 60"
    tmux("new-session", "-d", "-s", SESSION, "-c", str(ROOT), "-x", "120", "-y", "40", line)
    return lambda: tmux("capture-pane", "-p", "-t", SESSION, check=False).stdout


def _capture_all(tmux: Tmux, screen: Callable[[], str], name: str, shows: str) -> None:
    for width, height in SIZES:
        tmux("resize-window", "-t", SESSION, "-x", str(width), "-y", str(height))

        def drawn(width: int = width) -> bool:
            shown = screen()
            return shows in shown and max(map(len, shown.splitlines()), default=0) <= width

        _until(drawn, 30, f"{name} at {width}x{height}", screen)
        time.sleep(0.6)  # the panes redraw on the app's own tick
        (CAPTURES / f"{name}_{width}x{height}.txt").write_text(screen())


@pytest.mark.screenshots
def test_the_demo_captured_in_tmux_at_three_sizes(tmp_path: Path, tmux: Tmux) -> None:
    CAPTURES.mkdir(exist_ok=True)
    screen = _demo(tmux, tmp_path)
    try:
        _until(lambda: "LOADING WEIGHTS" in screen() and "shards/s" in screen(), 120, "loading", screen)
        _capture_all(tmux, screen, "loading", "LOADING WEIGHTS")
        _until(lambda: "CUDA GRAPH" in screen(), 240, "capture", screen)
        _capture_all(tmux, screen, "capture", "CUDA GRAPH")
        _until(lambda: "SERVING" in screen() or "READY" in screen(), 240, "ready", screen)
        tmux("send-keys", "-t", SESSION, "K")
        _until(lambda: "Yes (y)" in screen(), 30, "the kill dialog", screen)
        _capture_all(tmux, screen, "confirm_kill", "Yes (y)")
        tmux("send-keys", "-t", SESSION, "y")
        _until(lambda: "STOPPED" in screen(), 60, "stopped", screen)
        _capture_all(tmux, screen, "stopped", "STOPPED")
        tmux("send-keys", "-t", SESSION, "q")
        _until(lambda: "DEMO-EXITED" in screen(), 60, "the demo's own way out", screen)  # then the terminal goes
    finally:
        tmux("kill-session", "-t", SESSION, check=False)
    time.sleep(2)
    screen = _demo(tmux, tmp_path, "--fault", "oom-capture")
    try:
        _until(lambda: "FAILED" in screen(), 300, "the OOM", screen)
        time.sleep(32)  # its toast gone (at 120×40 it stays 30 s): the capture shows the state, not the news
        _capture_all(tmux, screen, "failed", "FAILED")
        tmux("send-keys", "-t", SESSION, "q")
        _until(lambda: "DEMO-EXITED" in screen(), 60, "the demo's own way out", screen)  # then the terminal goes
    finally:
        tmux("kill-session", "-t", SESSION, check=False)
    DRAWN_BY.write_text(drawing_digest() + "\n")
