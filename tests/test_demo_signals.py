"""`sglang-tui demo` in a real terminal (a pty): closing it (SIGHUP), SIGTERM or SIGINT stops the simulated server;
no process of the demo is left (issue 14). Only the processes this test started are looked at or signalled."""

from __future__ import annotations

import os
import pty
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.processes import Cli

ROOT = Path(__file__).resolve().parent.parent


def _procs_with(needle: str) -> list[int]:
    """PIDs whose command line mentions `needle` (this test's private temp dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmdline:
            found.append(int(entry.name))
    return found


def _simulator(pid: int, needle: str) -> bool:
    """The process runs `… simulate …` with `needle` on its command line (the demo's simulated server)."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"simulate" in words and any(needle.encode() in w for w in words)


def _wait(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return bool(predicate())


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT], ids=["SIGHUP", "SIGTERM", "SIGINT"])
def test_demo_leaves_no_process_after_a_signal(tmp_path: Path, signum: int, cli: Cli) -> None:
    master, slave = pty.openpty()
    os.set_blocking(master, True)
    env = dict(
        os.environ,
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        TMPDIR=str(tmp_path),
        TERM="xterm-256color",
        COLUMNS="100",
        LINES="30",
    )
    err_file = tmp_path / "demo.err"  # Textual draws on stderr: a file, so a full pipe never blocks the app
    demo = cli.popen("demo", "--speed", "5", env=env, stdin=slave, stdout=slave, stderr=err_file.open("wb"))
    os.close(slave)
    drained = threading.Thread(target=_drain, args=(master,), daemon=True)
    drained.start()
    try:
        # the simulator's processes run with the demo's temp dir (under our TMPDIR) on their command lines
        # (the simulator itself, by its command: the tool's own looks at the log name the dir too, and come and go)
        def others() -> list[int]:
            return [p for p in _procs_with(str(tmp_path)) if p != demo.pid]

        simulating = f"{tmp_path}"
        assert _wait(lambda: any(_simulator(p, simulating) for p in others()), 90), "the simulated server never started"
        sims = others()
        assert any(_simulator(p, simulating) for p in sims), sims
        # the TUI has drawn its footer: its app runs, so its signal handlers are in place (they come just before)
        assert _wait(lambda: b"quit" in err_file.read_bytes(), 90), "the demo's TUI never drew its footer"
        os.kill(demo.pid, signum)
        rc = demo.wait(timeout=60)
        err = err_file.read_bytes()
        assert rc == 128 + signum, err.decode(errors="replace")[-2000:]
        assert _wait(lambda: not any(Path(f"/proc/{p}").exists() and _is_ours(p, tmp_path) for p in sims), 20), (
            f"left running: {[p for p in sims if Path(f'/proc/{p}').exists()]}"
        )
        assert b"simulated server terminate done" in err
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait(timeout=10)
        for pid in _procs_with(str(tmp_path)):  # only what this test started (its private temp dir)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os.close(master)


def _is_ours(pid: int, tmp_path: Path) -> bool:
    try:
        return str(tmp_path) in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False


def _drain(fd: int) -> None:
    """Read the terminal's output so the app never blocks on a full pty."""
    while True:
        try:
            if not os.read(fd, 65536):
                return
        except OSError:
            return


def test_demo_stall_limit_scales_with_speed_and_takes_stall_after() -> None:
    from tui.cli import build_parser
    from tui.commands.demo import SIM_STALL_S, demo_stall_after

    assert demo_stall_after(10.0, None) == SIM_STALL_S / 10 == 30.0
    assert demo_stall_after(100.0, None) == 3.0
    assert demo_stall_after(10.0, 7.5) == 7.5
    args = build_parser().parse_args(["demo", "--speed", "20", "--stall-after", "12"])
    assert args.stall_after == 12.0 and args.speed == 20.0
