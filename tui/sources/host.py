"""Host: where the server runs. One interface, two implementations (LocalHost, SshHost).

Log tail, GPU probe, health and control are written once against this interface, so the same command
strings run in the demo, in the tests and in production. Commands are `sh` command lines; every path and
argument in them must already be quoted with `shlex.quote` by the caller. All output is bytes.

This module is a contract: LocalHost (tui/sources/local.py) and SshHost (tui/sources/ssh.py) implement it.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable

from tui.core.events import ConnectionState
from tui.core.record import Record, record


class HostError(Exception):
    """Base of host errors. str(err) is one clear line: what is wrong and what to do."""


class HostUnreachable(HostError):
    """Transient: refused, timed out, connection lost. Worth retrying with backoff."""


class HostAuthError(HostError):
    """Final: host key unknown or changed, authentication refused. Never retried."""


@record
class CommandResult(Record):
    returncode: int | None  # None when the link died before an exit status came
    stdout: bytes
    stderr: bytes


class RemoteProcess(abc.ABC):
    """A long-running command (tail, GPU probe). Reading stops at EOF (b"")."""

    @abc.abstractmethod
    async def read(self, n: int = 65536) -> bytes:
        """Next chunk of stdout (at most n bytes); b"" at EOF. Raises HostUnreachable if the link died."""

    @abc.abstractmethod
    async def read_stderr(self, n: int = 65536) -> bytes:
        """Next chunk of stderr; b"" at EOF."""

    @abc.abstractmethod
    async def wait(self) -> int | None:
        """Exit status (None if the link died)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop it: close the channel / kill the local process. Never leaves it running on the host."""

    async def write(self, data: bytes) -> None:
        """More bytes for its stdin, which stays open when it was started without `input` (the mux agent)."""
        raise HostError(f"{type(self).__name__}: writing to a running command's stdin is not supported")

    async def __aenter__(self) -> RemoteProcess:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def chunks(self, n: int = 65536) -> AsyncIterator[bytes]:
        while True:
            data = await self.read(n)
            if not data:
                return
            yield data


class Host(abc.ABC):
    """A machine the tool talks to."""

    #: What the user typed (`local`, `user@gpu1`, an ssh config alias): shown in the header.
    name: str

    @abc.abstractmethod
    async def connect(self) -> None:
        """Open the link (SSH: connect, verify the host key strictly, authenticate). Raises HostError."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close everything this host opened (channels, forwards, local processes)."""

    @abc.abstractmethod
    async def run(self, command: str, *, input: bytes | None = None, timeout: float | None = 30.0) -> CommandResult:
        """Run a short `sh` command to completion. Raises HostUnreachable / HostAuthError; TimeoutError on timeout."""

    @abc.abstractmethod
    async def start(self, command: str, *, input: bytes | None = None) -> RemoteProcess:
        """Start a long-running `sh` command with stdout/stderr as bytes; `input` is written then stdin is closed."""

    @abc.abstractmethod
    async def http_base_url(self, port: int) -> str:
        """Base URL reaching 127.0.0.1:PORT on the host (SSH: through a local port forward)."""

    async def url_to(self, host: str, port: int) -> str:
        """Base URL reaching HOST:PORT as this host reaches it (a Slurm node's port from its login node)."""
        raise HostError(f"{self.name}: cannot reach {host}:{port} from here")

    def on_connection(self, callback: Callable[[ConnectionState], None]) -> None:
        """Register a callback for connection state changes (connecting, connected, reconnecting, failed)."""
        self._connection_callbacks = [*getattr(self, "_connection_callbacks", []), callback]

    def _emit_connection(self, state: ConnectionState) -> None:
        for callback in getattr(self, "_connection_callbacks", []):
            callback(state)
