"""A failing ProxyCommand is named (issue 17), not "Connection lost": a real sshd reached through an ssh config
whose ProxyCommand works (a small relay: the config is right), exits at once (`false`), or is missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.sim import ROOT
from tests.helpers.sshd import Sshd

RELAY = """import os, socket, sys, threading
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
def up():
    while (b := os.read(0, 65536)):
        s.sendall(b)
    s.shutdown(socket.SHUT_WR)
threading.Thread(target=up, daemon=True).start()
while (b := s.recv(65536)):
    os.write(1, b)
"""


def config(tmp_path: Path, sshd: Sshd, proxy: str) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text(
        f"Host proxied\n  HostName {sshd.host}\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.identity}\n  UserKnownHostsFile {sshd.known_hosts}\n"
        f"  ProxyCommand {proxy}\n"
    )
    return path


def stop_through(cfg: Path) -> subprocess.CompletedProcess[str]:
    """`stop` on a port where nothing runs: it connects, finds nothing (exit 3), or cannot connect (exit 4)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tui",
            "stop",
            "proxied",
            "--ssh-config",
            str(cfg),
            "--port",
            "1",
            "--remote-python",
            sys.executable,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


def test_a_working_proxy_command_connects(sshd: Sshd, tmp_path: Path) -> None:
    (tmp_path / "relay.py").write_text(RELAY)
    run = stop_through(config(tmp_path, sshd, f"{sys.executable} {tmp_path / 'relay.py'} %h %p"))
    assert run.returncode == 6 and "no server found on port 1" in run.stderr, run.stderr


@pytest.mark.parametrize(
    "proxy, why",
    [
        ("false", "ended before the SSH handshake"),
        ("/nonexistent/nc %h %p", "could not be started: No such file or directory"),
    ],
)
def test_a_failing_proxy_command_is_named(sshd: Sshd, tmp_path: Path, proxy: str, why: str) -> None:
    run = stop_through(config(tmp_path, sshd, proxy))
    shown = proxy.replace("%h", sshd.host).replace("%p", str(sshd.port))
    assert run.returncode == 4, run.stderr
    assert f"ProxyCommand `{shown}` {why}" in run.stderr and "Traceback" not in run.stderr, run.stderr
