"""Issue 23 in a real terminal (tmux at 80x24, 120x40 and 200x50): the TUI as terminal people expect it.

Wrap loses nothing; dialogs open under the header and take notices on their own line; toasts never cover the header;
restart, terminate and kill are offered only when they can work; the clipboard gets OSC 52 through tmux where tmux
lets it through, and the notice says what was sent and where it was saved; a key clash in the settings is one line;
ctrl+c quits; j/k/g/G move the log; `e` on a failure lands on the line the verdict names."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.helpers.processes import Spawner, Tmux
from tests.helpers.sim import SimServer
from tests.helpers.sshd import free_port
from tests.helpers.tui_tmux import SIZE_IDS, SIZES, TuiPane, inside_box

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (a real terminal)")

# Long lines as SGLang prints them, every character told apart from its neighbours (a dropped one shows).
LONG_LINES = [
    "[2026-01-12 10:00:04 TP0] Decode batch, #running-req: 12, #token: 18233, token usage: 0.04, accept len: 3.52, "
    "accept rate: 0.88, cuda graph: True, gen throughput (token/s): 1234.56, #queue-req: 0, #grammar-queue-req: 0, "
    "#retracted-req: 0",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 2375, in '
    "configure_scheduler_process  scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, "
    'pp_rank, dp_rank)  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/tp_worker.py", line 81',
    "[2026-01-12 10:00:06 TP3] KV Cache is allocated. #tokens: 1843200, K size: 27.00 GB, V size: 27.00 GB; "
    + ", ".join(f"block{i:03d}={i * 7 % 1000:03d}MiB" for i in range(16)),
]


def _long_log(tmp_path: Path, spawn: Spawner) -> Path:
    """A log with LONG_LINES, held open by a process that stands for its server (so the watch sees a live writer,
    and no "the server failed" toast covers the rows under test)."""
    log = tmp_path / "server.log"
    log.write_text("[2026-01-12 10:00:00] short line one\n" + "\n".join(LONG_LINES) + "\n[2026-01-12 10:00:07] end\n")
    spawn(["sh", "-c", f"exec 3>>{shlex.quote(str(log))}; exec sleep 600"])
    return log


def _log_rows(pane: TuiPane) -> list[str]:
    """The log pane's text rows as drawn (its status line left out, the scrollbar's two columns cut off)."""
    rows = pane.rows()
    top = next(i for i, row in enumerate(rows) if "╭─ log" in row)
    body = []
    for row in rows[top + 2 :]:
        if "╰" in row:
            break
        body.append(inside_box(row)[:-2])
    return body


def _unwrapped(rows: list[str]) -> list[str]:
    """The long lines whose rows on screen, joined, are not the line (or that are not on screen at all)."""
    width = len(rows[0]) if rows else 0
    wrong = []
    for line in LONG_LINES:
        first = next((i for i, row in enumerate(rows) if width and row == line[:width]), None)
        if first is None or len(line) <= width:
            wrong.append(f"not on screen wrapped at {width}: {line[:40]}…")
            continue
        joined = "".join(rows[first : first + -(-len(line) // width)]).rstrip()
        if joined != line:
            wrong.append(f"joined rows: {joined!r}, the line: {line!r}")
    return wrong


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_wrap_gives_back_every_log_line_exactly(
    tmux: Tmux, spawn: Spawner, tmp_path: Path, size: tuple[int, int]
) -> None:
    log = _long_log(tmp_path, spawn)
    pane = TuiPane(tmux, tmp_path, size).start("local", "--log", str(log), "--port", str(free_port()), "--read-only")
    try:
        pane.until_on_screen("[2026-01-12 10:00:07] end")
        pane.keys("1", "w")  # the log (focused) maximized: 80x24 holds the longest line then; and wrapped
        pane.until(lambda s: "wrap" in s and "╭─ log" in s, "the wrapped log")
        pane.until(lambda s: not _unwrapped(_log_rows(pane)), "every long line wrapped whole", timeout=30)
        rows = _log_rows(pane)
        assert _unwrapped(rows) == []  # every wrapped row joined gives back its log line exactly
        assert len(rows[0]) == size[0] - 4  # rows as wide as the pane less its borders and its scrollbar
    finally:
        pane.stop()


def _dialog_rows(rows: list[str]) -> tuple[int, int]:
    """The first and last row of the dialog box (thick border: █▀▀ … █▄▄)."""
    top = next(i for i, row in enumerate(rows) if "█▀▀" in row)
    bottom = next(i for i in range(top, len(rows)) if "█▄▄" in rows[i])
    return top, bottom


def _header(pane: TuiPane, *words: str) -> None:
    """The header's first rows are on screen, whole (nothing drawn over the verdict); its phase one of `words`."""
    pane.until(lambda s: any(w in (s.split("\n") + ["", ""])[1] for w in words), f"the header saying {words}")
    rows = pane.rows()
    assert rows[0].startswith("  sglang-tui  local demo "), rows[:4]
    assert any(w in rows[1] for w in words), rows[:4]
    assert not any(c in "".join(rows[:3]) for c in "▌█"), rows[:4]  # no toast, no dialog over them


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_demo_dialogs_help_and_keys_as_people_expect(tmux: Tmux, tmp_path: Path, size: tuple[int, int]) -> None:
    width, height = size
    pane = TuiPane(tmux, tmp_path, size).start("demo", "--speed", "10")
    try:
        pane.until_on_screen("LOADING WEIGHTS", timeout=90)
        footer = pane.rows()[-1]
        assert footer.startswith(" q/^q quit ") and " r restart " in footer and " T terminate " in footer
        assert footer.rstrip().endswith(" K kill")

        pane.keys("b")  # not ready: the phase in words, not an id
        pane.until_toast("bench: the server is not ready yet (")
        phase = re.search(r"not ready yet \(([^)]*)\)", pane.toasts())
        assert phase is not None and "_" not in phase.group(1), phase

        pane.keys("?")  # the help: under the header, nothing cut, and the demo's q said as it is
        pane.until_on_screen("keys (/ filters, esc closes)")
        _header(pane, "LOADING", "STARTING", "INIT", "KV CACHE", "CUDA")
        help_rows = pane.until_box("keys (/ filters, esc closes)")
        assert help_rows and not any("…" in row for row in help_rows)  # the words wrap, nothing is cut
        assert "the demo stops its simulated server" in " ".join(" ".join(help_rows).split())
        pane.keys("Escape", "P")
        pane.until_on_screen("processes of the server on local demo")
        _header(pane, "LOADING", "STARTING", "INIT", "KV CACHE", "CUDA")
        pane.keys("Escape")

        pane.keys("s", "s")  # errors only: a starting server has none, and the pane says so
        pane.until_on_screen("no error line among the")
        pane.keys("s")

        pane.keys("r")  # restart: what will happen, in a few lines; the exact commands one key away
        pane.until_on_screen(" lines of sh)")  # "c: the exact commands (N lines of sh)": N moves with the script
        _header(pane, "LOADING", "STARTING", "INIT", "KV CACHE", "CUDA", "WARMUP", "READY")
        rows = pane.rows()
        top, bottom = _dialog_rows(rows)
        assert bottom - top + 1 <= 20 and bottom < height and "Yes (y)" in pane.dialog() and "No (n)" in pane.dialog()
        assert "will: SIGTERM to its process group" in pane.dialog()
        pane.keys("c")
        pane.until_in_dialog("c: hide the exact commands")
        shown = pane.dialog()
        assert "kill -s TERM --" in shown and "Yes (y)" in shown and "No (n)" in shown  # the buttons stay
        pane.keys("n")

        pane.keys("C-s")  # the log saved under the state directory, and the notice says where
        logs = pane.state_dir / "sglang-tui" / "logs"
        pane.until_toast(f"lines to {logs}/sglang-tui-local_demo-")
        assert len(list(logs.glob("sglang-tui-local_demo-*.log"))) == 1 and not list(
            Path.cwd().glob("sglang-tui-*.log")
        )

        first = (next(tmp_path.glob("sglang-tui-demo-*")) / "server.log").read_text().splitlines()[0]
        pane.keys("g")  # the top of the log, then j/k a row, then G: following again
        pane.until(lambda s: _log_rows(pane)[0].startswith(first[: width - 8]), "the first log line on top")
        pane.keys("j")
        pane.until(lambda s: not _log_rows(pane)[0].startswith(first[: width - 8]), "j: a row down")
        pane.keys("k")
        pane.until(lambda s: _log_rows(pane)[0].startswith(first[: width - 8]), "k: a row up")
        pane.keys("G")
        pane.until(lambda s: "following" in s, "G: following")

        pane.keys("K")
        pane.until_on_screen("Kill the server")
        pane.keys("y")
        pane.until_on_screen("kill done", timeout=60)
        footer = pane.until(lambda s: " r start" in s.split("\n")[-1], "r start in the footer").split("\n")[-1]
        assert " T terminate" not in footer and " K kill" not in footer  # nothing offered that cannot work
        pane.keys("K")
        pane.until_toast("nothing to kill: no server process is running (r starts it again)")
        assert "Kill the server" not in pane.text()

        pane.keys("C-c")  # quits, as in htop, btop, k9s and lazygit
        assert pane.exit_code() == 0
        pane.until_on_screen("sglang-tui demo: the simulated server had already stopped")
    finally:
        pane.stop()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_a_failure_during_a_dialog_is_on_its_line_and_e_lands_on_its_cause(
    tmux: Tmux, tmp_path: Path, size: tuple[int, int]
) -> None:
    pane = TuiPane(tmux, tmp_path, size).start("demo", "--speed", "20", "--fault", "oom-load")
    try:
        pane.until_on_screen("LOADING WEIGHTS", timeout=90)
        pane.keys("r")
        pane.until_on_screen("Restart the server?")
        pane.until_in_dialog("the server failed", timeout=120)  # the failure's notice, while the dialog is open
        # the header grows by the cause line and the dialog moves under it: the layout once both have settled
        pane.until(
            lambda s: "FAILED" in (s.split("\n") + [""])[1] and "Yes (y)" in pane.dialog() and "the server failed"
            in pane.dialog(), "the dialog, its notice and its buttons under the FAILED header")  # fmt: skip
        rows = pane.rows()
        top, bottom = _dialog_rows(rows)
        assert "Yes (y)" in pane.dialog() and "No (n)" in pane.dialog() and bottom < size[1]  # on its own line
        assert not any("▌" in row for row in rows[top : bottom + 1])  # no toast over the dialog
        _header(pane, "FAILED")
        pane.keys("n")
        pane.until_toast("the server failed")  # the toast, on the main screen once the dialog is gone
        _header(pane, "FAILED")  # the toasts stack under the header

        log = next(tmp_path.glob("sglang-tui-demo-*")) / "server.log"
        cause = next(line for line in log.read_text().splitlines() if "OutOfMemoryError" in line)
        pane.keys("e", "c")  # the first e: the line the verdict names (not "Received sigquit")
        pane.until_toast("to the terminal's clipboard (OSC 52, through tmux); saved to")
        copied = list((pane.state_dir / "sglang-tui").glob("copied-local_demo*.txt"))
        assert len(copied) == 1 and copied[0].read_text() == cause
        pane.keys("q")
        assert pane.exit_code() == 0
        pane.until_on_screen("sglang-tui demo: the simulated server had already stopped")
    finally:
        pane.stop()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_restart_without_launch_is_neither_shown_nor_run(
    tmux: Tmux, sim: object, tmp_path: Path, size: tuple[int, int]
) -> None:
    server: SimServer = sim(speed=50)
    pane = TuiPane(tmux, tmp_path, size).start("local", "--log", str(server.log), "--port", str(server.port))
    try:
        footer = pane.until(lambda s: " K kill" in s.split("\n")[-1], "T and K in the footer").split("\n")[-1]
        assert " T terminate" in footer and " r restart" not in footer and " r start" not in footer
        pane.keys("r")
        pane.until_toast("restart needs --launch CMD")
        assert "Restart the server?" not in pane.text()
        assert server.alive()  # nothing was done to it
        pane.keys("q")
        assert pane.exit_code() == 0
    finally:
        pane.stop()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_a_key_clash_in_the_settings_is_one_line_naming_both(tmux: Tmux, tmp_path: Path, size: tuple[int, int]) -> None:
    pane = TuiPane(tmux, tmp_path, size)
    config = pane.config_dir / "sglang-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[keys]\nkill-server = "q"\n')
    pane.start("demo")
    try:
        assert pane.exit_code() == 2
        said = pane.joined().split("EXITED")[0].strip().splitlines()
        assert said == [
            f'sglang-tui: {config}: [keys] kill-server = "q" is already the key of quit: give one of them another'
        ]
    finally:
        pane.stop()


def test_copy_reaches_tmux_through_set_clipboard_or_passthrough(tmux: Tmux, spawn: Spawner, tmp_path: Path) -> None:
    """tmux(1): with `set-clipboard on` an application's OSC 52 becomes a tmux buffer; with `allow-passthrough on` the
    DCS-wrapped one goes to the terminal outside, here a second tmux that keeps it as its buffer. With tmux's
    defaults (external, passthrough off) neither: the notice says it was sent and where the text was saved."""
    log = _long_log(tmp_path, spawn)
    inner = Tmux()
    outer_pane = TuiPane(tmux, tmp_path, (120, 40), name="outer")
    app = TuiPane(inner, tmp_path, (120, 40), name="app")
    tui = app.command("local", "--log", str(log), "--port", str(free_port()), "--read-only")
    client = " ".join(["env", "-u", "TMUX", *inner.argv("new-session", "-s", "app", "-x", "120", "-y", "40")])
    tmux("new-session", "-d", "-s", "outer", "-x", "120", "-y", "40", f"{client} {shlex.quote(tui)}")
    tmux("set-option", "-g", "set-clipboard", "on")  # the outer "terminal" keeps what reaches it
    saved = app.state_dir / "sglang-tui" / "copied-local.txt"
    last = "[2026-01-12 10:00:07] end"
    try:
        outer_pane.until_on_screen("[2026-01-12 10:00:07] end")
        app.keys("c")  # tmux's defaults: nothing passes
        outer_pane.until_toast(f"(OSC 52, through tmux); saved to {saved}")
        assert saved.read_text() == last
        assert (
            "tmux passes it on with `set -g set-clipboard on` or `set -g allow-passthrough on`" in outer_pane.toasts()
        )
        assert inner("show-buffer", check=False).returncode != 0 and tmux("show-buffer", check=False).returncode != 0

        inner("set-option", "-g", "allow-passthrough", "on")  # the wrapped sequence goes through to the outer
        app.keys("c")
        outer_pane.until(lambda s: tmux("show-buffer", check=False).stdout == last, "the outer tmux's buffer")
        assert inner("show-buffer", check=False).returncode != 0

        inner("set-option", "-g", "allow-passthrough", "off")
        inner("set-option", "-g", "set-clipboard", "on")  # the inner tmux takes the plain OSC 52 as a buffer
        app.keys("C")
        report = app.state_dir / "sglang-tui" / "report-local.md"
        outer_pane.until(lambda s: inner("show-buffer", check=False).stdout == report.read_text() if report.exists()
                         else False, "the inner tmux's buffer")  # fmt: skip
        assert report.read_text().startswith("## sglang-tui: local")
    finally:
        inner.kill_server()
        outer_pane.stop()


def test_the_settings_file_is_named_in_help(cli: object, tmp_path: Path) -> None:
    for args in (("--help",), ("watch", "--help")):
        done = cli(*args, env={"XDG_CONFIG_HOME": str(tmp_path)})
        assert done.returncode == 0
        assert f"settings: {tmp_path}/sglang-tui/config.toml" in " ".join(done.stdout.split()), done.stdout
