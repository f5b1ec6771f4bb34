"""A watcher of another uid (issue 17 case 4): a real non-root user (CI runs as root) and a real sshd that logs
it in, so every command on the host runs as that user against processes started as root. The fixtures are
registered in tests/conftest.py; `tool` runs a sglang-tui command through that sshd (the `cli` fixture)."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.processes import Cli
from tests.helpers.sshd import Sshd

SYSTEM_PYTHON = "/usr/bin/python3"  # the user's GPU probe: root's own interpreter may live under /root (0700)
CANNOT_SEE = "cannot see the server's processes (owned by uid 0; watch as that user or root)"


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory both root and the other user can read (pytest's tmp_path is root's alone)."""
    assert os.geteuid() == 0, "these tests create a user: run them as root (CI does)"
    path = Path(tempfile.mkdtemp(prefix="sglang-tui-uid-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def other_user() -> Iterator[tuple[str, int]]:
    name = "sgt" + secrets.token_hex(4)
    subprocess.run(["useradd", "-m", "-s", "/bin/sh", "-p", "*", name], check=True, capture_output=True)
    yield name, pwd.getpwnam(name).pw_uid
    subprocess.run(["userdel", "-f", "-r", name], capture_output=True)


@pytest.fixture
def user_sshd(shared_dir: Path, other_user: tuple[str, int]) -> Iterator[Sshd]:
    """A real sshd that logs the other user in (its authorized_keys readable by that user)."""
    server = Sshd(shared_dir / "sshd")
    server.user = other_user[0]
    server.start()
    yield server
    server.stop()


def tool_args(command: str, sshd: Sshd, *args: str) -> list[str]:
    """`COMMAND 127.0.0.1 …` as the other user (through its sshd), with the system interpreter (for `cli`)."""
    return [command, "127.0.0.1", *sshd.ssh_args(), "--remote-python", SYSTEM_PYTHON, *args]


def tool(cli: Cli, command: str, sshd: Sshd, *args: str, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return cli(*tool_args(command, sshd, *args), timeout=timeout)


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]
