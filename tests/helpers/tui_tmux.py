"""The TUI in a real terminal: one pane of the test's own tmux server (the `tmux` fixture), read with capture-pane and
driven with send-keys. Every process the pane starts carries the test's temp dir (TMPDIR, XDG dirs), so what a failed
test leaves behind is found by it and ended (never by name)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.helpers.processes import Tmux
from tests.helpers.sim import ROOT
from tui.ui.toasts import TOAST_WIDTH

SIZES = [(80, 24), (120, 40), (200, 50)]
SIZE_IDS = [f"{w}x{h}" for w, h in SIZES]
EXITED = re.compile(r"EXITED rc=(\d+)")


class TuiPane:
    """`python -m tui ARGS` in a tmux window of a given size; `EXITED rc=N` is printed when it ends."""

    def __init__(self, tmux: Tmux, tmp_path: Path, size: tuple[int, int], name: str = "tui") -> None:
        self.tmux = tmux
        self.tmp_path = tmp_path
        self.size = size
        self.target = name
        self.state_dir = tmp_path / "state"
        self.config_dir = tmp_path / "config"

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {
            "XDG_CONFIG_HOME": str(self.config_dir),
            "XDG_STATE_HOME": str(self.state_dir),
            "SGLANG_TUI_HISTORY": str(self.tmp_path / "history.sqlite3"),
            "TMPDIR": str(self.tmp_path),
            "TERM": "xterm-256color",
            **(extra or {}),
        }

    def command(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        """The shell line the pane runs: the TUI, then its exit status, then a wait so the screen stays readable."""
        assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env(env).items())
        tui = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "tui", *args))
        # COLUMNS and LINES unset: the test process may carry them (curses sets them at C level), and Textual would
        # take them over the pane's real size
        return f"env -u COLUMNS -u LINES {assigns} {tui}; echo EXITED rc=$?; sleep 600"

    def start(self, *args: str, env: Mapping[str, str] | None = None) -> TuiPane:
        width, height = self.size
        self.tmux("new-session", "-d", "-s", self.target, "-c", str(ROOT), "-x", str(width), "-y", str(height),
                  self.command(*args, env=env))  # fmt: skip
        return self

    def rows(self) -> list[str]:
        """The screen, one string per row (tmux pads nothing: a row ends at its last character)."""
        return self.tmux("capture-pane", "-p", "-t", self.target).stdout.split("\n")[: self.size[1]]

    def text(self) -> str:
        return "\n".join(self.rows())

    def keys(self, *keys: str) -> None:
        for key in keys:  # one at a time: the app sees each as its own key press
            self.tmux("send-keys", "-t", self.target, key)
            if key in ("Escape", "Esc"):  # a lone ESC is told from a sequence by a pause (ESC P would open a DCS)
                time.sleep(0.5)

    def until(self, predicate: Callable[[str], bool], what: str, timeout: float = 60.0) -> str:
        """The screen once `predicate(screen)` holds; else fail naming `what`, with the screen."""
        deadline = time.monotonic() + timeout
        screen = self.text()
        while not predicate(screen):
            if time.monotonic() > deadline:
                raise AssertionError(f"never on screen: {what}\n{screen}")
            time.sleep(0.2)
            screen = self.text()
        return screen

    def until_on_screen(self, needle: str, timeout: float = 60.0) -> str:
        """Until `needle` is on one row (or on rows a wrapped paragraph spans, spaces made one)."""
        return self.until(lambda screen: needle in " ".join(screen.split()), repr(needle), timeout)

    def joined(self) -> str:
        """The screen with rows the terminal wrapped joined again (capture-pane -J): a CLI's long line, whole."""
        return self.tmux("capture-pane", "-p", "-J", "-t", self.target).stdout

    def toasts(self) -> str:
        """The toasts' words: on each row, the toast's own columns after its left edge (▌); what shows to its right
        (a pane's scrollbar, its border) is not the toast's (tui/ui/toasts.py: a toast is TOAST_WIDTH wide)."""
        parts = []
        for row in self.rows():
            edge = row.rfind("▌")
            if edge >= 0:
                parts.append(row[edge + 1 : edge + TOAST_WIDTH].rstrip(" │╮╯─"))
        return " ".join(" ".join(parts).split())

    def until_toast(self, needle: str, timeout: float = 60.0) -> str:
        """Until a toast says `needle`; spaces are left out of both (a toast folds a long path mid-word)."""
        bare = "".join(needle.split())
        return self.until(lambda _: bare in "".join(self.toasts().split()), f"a toast saying {needle!r}", timeout)

    def box(self, title: str) -> list[str]:
        """The rows inside the round-bordered box titled `title` (a pane, the help), cut at its own borders; []
        while it is not whole on screen (no bottom border yet: a capture can land in the middle of a redraw)."""
        rows = self.rows()
        top = next((i for i, row in enumerate(rows) if f"╭─ {title}" in row), None)
        if top is None:
            return []
        left = rows[top].index(f"╭─ {title}")
        right = rows[top].index("╮", left)
        inside: list[str] = []
        for row in rows[top + 1 :]:
            if row[left : left + 1] == "╰":
                return inside
            inside.append(row[left + 1 : right])
        return []

    def until_box(self, title: str, timeout: float = 60.0) -> list[str]:
        """The rows inside the box titled `title`, once it is whole on screen (m30: the help read mid-redraw ran
        into the footer)."""
        self.until(lambda _: bool(self.box(title)), f"the box {title!r}, whole", timeout)
        return self.box(title)

    def dialog(self) -> str:
        """The words inside the dialog's box (its thick border: █ on each side)."""
        parts = [row[row.find("█") + 1 : row.rfind("█")] for row in self.rows() if row.count("█") >= 2]
        return " ".join(" ".join(parts).split())

    def until_in_dialog(self, needle: str, timeout: float = 60.0) -> str:
        return self.until(lambda _: needle in self.dialog(), f"the dialog saying {needle!r}", timeout)

    def exit_code(self, timeout: float = 60.0) -> int:
        screen = self.until(lambda s: EXITED.search(s) is not None, "the TUI's exit", timeout)
        found = EXITED.search(screen)
        assert found is not None
        return int(found.group(1))

    def header_rows(self) -> list[str]:
        """The rows above the first pane's top border (`╭`): the header."""
        rows = self.rows()
        for i, row in enumerate(rows):
            if row.lstrip().startswith("╭") or row.startswith("╭"):
                return rows[:i]
        return rows

    def stop(self) -> None:
        """End the window (SIGHUP, as a closed terminal), then anything of the test's still running."""
        self.tmux("kill-session", "-t", self.target, check=False)
        end_leftovers(self.tmp_path)


def ours(tmp_path: Path) -> list[int]:
    """The processes the pane started: their environment has TMPDIR set to this test's temp dir (the TUI, and the
    demo's simulator under it), or their command line names it (the pane's shell)."""
    mark, tmpdir = str(tmp_path).encode(), b"TMPDIR=" + str(tmp_path).encode()
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{entry}/exe").endswith("/tmux"):
                continue  # the tmux server (its command line holds the pane's): the fixture ends it
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            if tmpdir in environ or mark in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
        except OSError:
            pass
    return [pid for pid in found if pid != os.getpid()]


def end_leftovers(tmp_path: Path, grace_s: float = 10.0) -> None:
    """Give the TUI's own clean-up (a SIGHUP stops the demo's simulator) time, then SIGKILL what is left of ours."""
    deadline = time.monotonic() + grace_s
    while ours(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in ours(tmp_path):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def inside_box(row: str) -> str:
    """A pane row's content: between its left border `│` and its right border (the scrollbar columns included)."""
    start = row.find("│")
    end = row.rfind("│")
    return row[start + 1 : end] if 0 <= start < end else ""
