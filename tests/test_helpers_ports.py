"""The tests' ports (tests/helpers/ports.py): never from the kernel's ephemeral range (where an outgoing connection
could take one before the server binds it), never the same one twice, and never one that another process of any
test run holds (a POSIX record lock per port)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers.ports import LOCK_FILE, free_port


def test_ports_are_below_the_ephemeral_range_and_never_handed_out_twice() -> None:
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert all(1024 <= port < ephemeral_low for port in ports)


def test_a_port_another_process_holds_cannot_be_claimed(spawn) -> None:
    child = spawn(
        [sys.executable, "-c", "from tests.helpers.ports import free_port; import sys; "
         "print(*[free_port() for _ in range(20)], flush=True); sys.stdin.read()"],
        stdin=-1, stdout=-1, text=True, cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    held = [int(port) for port in child.stdout.readline().split()]
    assert len(held) == 20
    # tried from a third process: closing the lock file here would drop every lock this worker holds (POSIX)
    tried = subprocess.run([sys.executable, "-c", TRY_LOCKS, str(LOCK_FILE), *map(str, held)], capture_output=True,
                           text=True, timeout=30, check=True)  # fmt: skip
    assert tried.stdout.split() == ["refused"] * len(held)


TRY_LOCKS = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
for port in map(int, sys.argv[2:]):
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
        print("claimed", port)
    except OSError:
        print("refused")
"""
