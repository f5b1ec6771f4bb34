"""Loopback ports for the tests' servers (sshd, the simulator, a foreign listener), safe across pytest-xdist
workers and across test runs of other checkouts on the same machine.

Binding port 0 and releasing it (the old way) hands out a port from the kernel's ephemeral range, where any
outgoing connection of any process (an ssh client, an HTTP poll) may take it before the server binds it, and two
workers may be handed the same one. So a port comes from just below the ephemeral range, where the kernel never
picks one for a connection, and is claimed with a one-byte POSIX record lock at offset PORT of one shared file:
a lock no other process can take until this one exits (the kernel drops it then, even after SIGKILL). A port
that something else already listens on (not one of ours) fails the trial bind and is passed over.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
import threading
from pathlib import Path

LOCK_FILE = Path(tempfile.gettempdir()) / "sglang-tui-test-ports.lock"
_SPAN = 12000  # ports of the range; a full run takes about a thousand


def _port_range() -> range:
    """The ports just below the kernel's ephemeral range (Linux: 32768-60999, so 20768-32767)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return range(max(1024, low - _SPAN), low)


class _Ports:
    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._fd: int | None = None
        self._pid = 0
        self._range = _port_range()
        self._next = 0

    def claim(self) -> int:
        with self._mutex:
            if self._fd is None or self._pid != os.getpid():  # a forked child holds none of its parent's locks
                self._fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
                self._pid = os.getpid()
                self._next = random.randrange(len(self._range))  # runs side by side start apart
            for _ in range(len(self._range)):
                port = self._range[self._next]
                self._next = (self._next + 1) % len(self._range)
                try:
                    fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
                except OSError:
                    continue  # another worker's or another run's
                if _bindable(port):
                    return port  # the lock stays held: this process never hands the port out again
                fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, port)
            raise RuntimeError(f"no free port in {self._range.start}-{self._range.stop - 1} (locks in {LOCK_FILE})")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_PORTS = _Ports()


def free_port() -> int:
    """A loopback port nobody listens on that no other test of any worker or run will be given."""
    return _PORTS.claim()


def accepts(port: int, timeout: float = 0.5) -> bool:
    """A TCP connection to 127.0.0.1:PORT is taken within `timeout` (a listener is there)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False
