"""The fleet board in a real terminal (tmux, 120×40 then 200×50): eight simulated servers on two loopback sshd
hosts (one SSH connection each), every row right as they start; a server whose fault comes while the board runs
shows it on its row; Enter opens a server's full view and Esc comes back. (Eight, not the issue's 24 with two
Slurm jobs: the machine these tests run on is shared by several people; bench/bench_fleet.py measures 24.)"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.processes import Sims, Tmux
from tests.helpers.sim import ROOT, SimServer
from tests.helpers.sshd import Sshd, free_port, sshd_available

SESSION = "sglang-tui-fleet"
pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None or not sshd_available(), reason="needs tmux (a real terminal) and OpenSSH sshd"
)


@pytest.fixture
def two_hosts(tmp_path: Path) -> Iterator[tuple[Path, list[Sshd]]]:
    servers = [Sshd(tmp_path / f"sshd{i}").start() for i in range(2)]
    config = tmp_path / "ssh_config"
    config.write_text("".join(
        f"Host gpu{'ab'[i]}\n  HostName {s.host}\n  Port {s.port}\n  User {s.user}\n  IdentityFile {s.identity}\n"
        f"  UserKnownHostsFile {s.known_hosts}\n"
        for i, s in enumerate(servers)
    ))  # fmt: skip
    yield config, servers
    for server in servers:
        server.stop()


def _until(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def _row(screen: str, name: str) -> str:
    return next((line for line in screen.splitlines() if line.strip().startswith(name + " ")), "")


def test_a_board_of_eight_in_a_real_terminal(
    tmp_path: Path, tmux: Tmux, sim: Sims, two_hosts: tuple[Path, list[Sshd]]
) -> None:
    config, hosts = two_hosts
    servers: dict[str, SimServer] = {}
    for name in ("a0", "a1", "a2", "a3", "b0", "b1", "b2"):
        servers[name] = sim(speed=100.0, shards=8, tp=2, speculative="none")
    late_dir, late_port = tmp_path / "late", free_port()  # started once the board runs, with a fault
    late_dir.mkdir()
    inventory = tmp_path / "fleet.toml"
    lines = [(n, f"gpu{n[0]}:{s.port}:{s.log}") for n, s in servers.items()]
    lines.append(("b3", f"gpub:{late_port}:{late_dir / 'sim.log'}"))
    inventory.write_text("".join(f'[[server]]\nname = "{n}"\ntarget = "{t}"\n' for n, t in lines))
    # no COLUMNS/LINES from the test's own environment: the board must take the terminal's size from tmux
    env = f"env -u COLUMNS -u LINES XDG_CONFIG_HOME={tmp_path} XDG_STATE_HOME={tmp_path} TMPDIR={tmp_path} TERM=xterm-256color"
    board = (f"{env} {sys.executable} -m tui fleet --inventory {inventory} --ssh-config {config} "
             f"--remote-python {sys.executable} --no-history; echo EXITED rc=$?; sleep 60")  # fmt: skip
    tmux("new-session", "-d", "-s", SESSION, "-c", str(ROOT), "-x", "120", "-y", "40", board)

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", SESSION, check=False).stdout

    try:
        ready = ("a0", "a1", "a2", "a3", "b0", "b1", "b2")
        assert _until(lambda: all(" ready " in _row(screen(), n) for n in ready), 150), screen()
        shown = screen()
        for name in ready:
            row = _row(shown, name)
            assert row.split()[1] == f"gpu{name[0]}" and " 200 " in row, row
        assert "7 ready" in shown and "8 servers" in shown
        assert "ready" not in _row(shown, "b3")

        servers["b3"] = sim(late_dir, port=late_port, speed=100.0, shards=8, tp=2, speculative="none",
                            fault="oom-load")  # fmt: skip
        assert _until(lambda: " failed " in _row(screen(), "b3"), 120), screen()
        assert "out of memory" in _row(screen(), "b3") or "1 failed" in screen()
        for sshd in hosts:  # one connection per host, for four servers each
            assert sshd.log.read_text().count("Accepted publickey") == 1

        tmux("send-keys", "-t", SESSION, "Enter")  # the first row: a0's full view
        assert _until(lambda: "enter open" not in screen() and "a0" in screen(), 30), screen()
        tmux("send-keys", "-t", SESSION, "Escape")
        assert _until(lambda: "enter open" in screen() and "8 servers" in screen(), 30), screen()

        tmux("resize-window", "-t", SESSION, "-x", "200", "-y", "50")
        assert _until(lambda: len(screen().splitlines()) >= 49 and "ready: the log says" in _row(screen(), "a0"), 30), (
            screen()
        )
        tmux("send-keys", "-t", SESSION, "q")
        assert _until(lambda: "EXITED rc=0" in screen(), 30), screen()
    finally:
        tmux("kill-session", "-t", SESSION, check=False)
        for pid in _ours(tmp_path):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _ours(tmp_path: Path) -> list[int]:
    """The board's processes (their command lines carry this test's temp dir); the simulators stop with `sim`."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if str(tmp_path).encode() in cmdline and b"fleet" in cmdline:
            found.append(int(entry))
    return found
