"""A real OpenSSH sshd on a loopback port, started by the tests (not a mock).

Keys, known_hosts and an ssh config live in one temporary directory; nothing touches ~/.ssh.
`Sshd.kill()` and `Sshd.start()` let a test kill sshd mid-stream and bring it back on the same port
with the same host key.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.helpers.ports import free_port

__all__ = ["SSHD", "Sshd", "free_port", "ssh_host", "sshd_available"]

SSHD = "/usr/sbin/sshd"


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    path.chmod(0o600)


class Sshd:
    def __init__(self, root: Path, port: int | None = None) -> None:
        self.root = root
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.user = getpass.getuser()
        self.proc: subprocess.Popen[bytes] | None = None
        root.mkdir(parents=True, exist_ok=True)
        self.host_key = root / "hostkey"
        self.identity = root / "client_key"
        self.wrong_identity = root / "wrong_key"
        for key in (self.host_key, self.identity, self.wrong_identity):
            if not key.exists():
                _keygen(key)
        (root / "authorized_keys").write_text((root / "client_key.pub").read_text())
        host_pub = (root / "hostkey.pub").read_text().split()
        self.known_hosts = root / "known_hosts"
        self.known_hosts.write_text(f"[{self.host}]:{self.port} {host_pub[0]} {host_pub[1]}\n")
        self.config = root / "sshd_config"
        self.config.write_text(
            f"Port {self.port}\nListenAddress {self.host}\nHostKey {self.host_key}\n"
            f"AuthorizedKeysFile {root / 'authorized_keys'}\nPidFile {root / 'sshd.pid'}\n"
            "UsePAM no\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PermitRootLogin prohibit-password\nMaxSessions 20\nLogLevel VERBOSE\n"
        )
        # A client config with an alias, so tests can also go through ~/.ssh/config-style resolution.
        self.ssh_config = root / "ssh_config"
        self.ssh_config.write_text(
            f"Host testhost\n  HostName {self.host}\n  Port {self.port}\n  User {self.user}\n"
            f"  IdentityFile {self.identity}\n  UserKnownHostsFile {self.known_hosts}\n"
        )
        self.log = root / "sshd.log"

    def start(self) -> Sshd:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([SSHD, "-D", "-f", str(self.config), "-E", str(self.log)])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"sshd exited: {self.log.read_text() if self.log.exists() else ''}") from None
                time.sleep(0.05)
        raise RuntimeError("sshd did not start listening")

    def kill(self) -> None:
        """Kill the listener and every session it forked (a real outage, not a polite close)."""
        if self.proc is None:
            return
        # sshd sessions are children of the listener; kill them too so open channels die for real.
        children = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout.split()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        for pid in children:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        self.proc = None

    def signal_tree(self, sig: signal.Signals) -> None:
        """Signal the listener and every session it forked (SIGSTOP: a host that hangs, its TCP connections kept;
        SIGCONT: it thaws)."""
        assert self.proc is not None
        children = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout.split()
        for pid in [self.proc.pid, *map(int, children)]:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        self.kill()

    def ssh_args(self) -> list[str]:
        """Common sglang-tui options that reach this sshd."""
        return [
            "--ssh-port",
            str(self.port),
            "--user",
            self.user,
            "--identity",
            str(self.identity),
            "--known-hosts",
            str(self.known_hosts),
        ]


def sshd_available() -> bool:
    return Path(SSHD).exists() and shutil.which("ssh-keygen") is not None


def ssh_host(sshd: Sshd, **overrides: object):  # -> SshHost (imported late: bench figures exclude asyncssh's import)
    """An SshHost for this sshd: its host key strictly, the test key, no agent; any option can be overridden."""
    from tui.sources.ssh import SshHost

    options: dict[str, object] = dict(
        port=sshd.port, user=sshd.user, identity=str(sshd.identity), known_hosts=str(sshd.known_hosts), agent=False
    )
    options.update(overrides)
    return SshHost(sshd.host, **options)  # type: ignore[arg-type]
