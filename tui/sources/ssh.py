"""SshHost: the Host interface over ONE asyncssh connection (strict host keys, keepalive, reconnect).

Bytes end to end (encoding=None: one invalid UTF-8 byte must not kill the link), every command wrapped
in `sh -c` so the remote login shell does not matter, exec channels budgeted below sshd's MaxSessions,
asyncssh's own logging sent to a file so it never draws over the screen.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import logging.handlers
import os
import shlex
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncssh
from asyncssh.listener import create_tcp_forward_listener

from tui.core.events import ConnectionState
from tui.sources.backoff import backoff_delays
from tui.sources.bounded import wait_at_most, within
from tui.sources.host import CommandResult, Host, HostAuthError, HostError, HostUnreachable, RemoteProcess
from tui.sources.hostkeys import (
    DEFAULT_KNOWN_HOSTS,
    KeyTarget,
    changed_key_message,
    key_target,
    listing_file,
    trusted_keys,
    unknown_key_message,
)

DEFAULT_KEEPALIVE = (5.0, 3)  # interval s, missed answers before the link counts as dead
DEFAULT_MAX_SESSIONS = 8  # sshd's default MaxSessions is 10; forwards do not count
_LINK_ERRORS = (asyncssh.ConnectionLost, asyncssh.DisconnectError, BrokenPipeError, ConnectionError, OSError)


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sglang-tui"


def route_asyncssh_logging(path: Path | None = None) -> Path | None:
    """Send the `asyncssh` logger to a file (once), never to the terminal."""
    logger = logging.getLogger("asyncssh")
    logger.propagate = False
    if any(getattr(h, "_sglang_tui", False) for h in logger.handlers):
        return path
    path = path or _cache_dir() / "asyncssh.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=5 << 20, backupCount=1, encoding="utf-8"
        )
    except OSError:
        handler, path = logging.NullHandler(), None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    handler._sglang_tui = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return path


def wrap_sh(command: str) -> str:
    """The command line sent to sshd: whatever the login shell is, `sh` runs the command."""
    return f"sh -c {shlex.quote(command)}"


def _split_target(target: str, user: str | None) -> tuple[str, str | None]:
    if "@" in target:
        target_user, host = target.rsplit("@", 1)
        return host, user or target_user
    return target, user


class _Client(asyncssh.SSHClient):
    """Reports the loss of one connection generation to its SshHost."""

    def __init__(self, owner: SshHost, generation: int) -> None:
        self._owner = owner
        self._generation = generation

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._on_lost(self._generation, exc)


class SshProcess(RemoteProcess):
    """A long-running remote command on an exec channel, bytes in and out."""

    def __init__(self, proc: asyncssh.SSHClientProcess[bytes], conn: asyncssh.SSHClientConnection, where: str) -> None:
        self._proc = proc
        self._conn = conn
        self._where = where

    def _lost(self) -> bool:
        return self._proc.exit_status is None and self._proc.exit_signal is None and self._conn.is_closed()

    async def _read(self, stream: Any, n: int) -> bytes:
        try:
            data: bytes = await stream.read(n)
        except _LINK_ERRORS as exc:
            raise HostUnreachable(f"{self._where}: connection lost ({exc})") from None
        if not data and self._lost():
            raise HostUnreachable(f"{self._where}: connection lost")
        return data

    async def read(self, n: int = 65536) -> bytes:
        return await self._read(self._proc.stdout, n)

    async def read_stderr(self, n: int = 65536) -> bytes:
        return await self._read(self._proc.stderr, n)

    async def write(self, data: bytes) -> None:
        try:
            self._proc.stdin.write(data)
            await self._proc.stdin.drain()
        except _LINK_ERRORS as exc:
            raise HostUnreachable(f"{self._where}: connection lost ({exc})") from None

    async def wait(self) -> int | None:
        try:
            await self._proc.wait(check=False)
        except _LINK_ERRORS:
            return None
        if self._proc.exit_status is None and self._proc.exit_signal is None:
            return None
        return self._proc.returncode

    async def close(self) -> None:
        # Closing a channel without a PTY does not kill the remote command, and sshd ignores signal requests
        # for root (OpenSSH <= 9.7): the commands we start watch their stdin or stdout and exit when the
        # channel goes. The TERM request is only a courtesy where sshd honours it.
        try:
            self._proc.terminate()
        except (OSError, asyncssh.Error):
            pass
        self._proc.close()
        try:
            await wait_at_most(self._proc.wait_closed(), 5.0)
        except _LINK_ERRORS:
            pass


class SshHost(Host):
    """A remote machine reached over one SSH connection that reconnects by itself."""

    def __init__(
        self,
        target: str,
        *,
        port: int | None = None,
        user: str | None = None,
        identity: str | None = None,
        known_hosts: str | None = None,
        ssh_config: str | None = None,
        keepalive: tuple[float, int] = DEFAULT_KEEPALIVE,
        connect_timeout: float = 15.0,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        backoff: tuple[float, float] = (0.5, 30.0),
        agent: bool = True,
    ) -> None:
        self.name = target
        self._host, self._user = _split_target(target, user)
        self._port = port
        self._identity = os.path.expanduser(identity) if identity else None
        self._known_hosts = os.path.expanduser(known_hosts) if known_hosts else None
        self._ssh_config = os.path.expanduser(ssh_config) if ssh_config else None
        self._keepalive = keepalive
        self._connect_timeout = connect_timeout
        self._backoff = backoff
        self._agent = agent
        self._sessions = asyncio.Semaphore(max_sessions)
        self._conn: asyncssh.SSHClientConnection | None = None
        self._generation = 0
        self._forwards: dict[int, asyncssh.SSHListener] = {}
        self._far_forwards: dict[tuple[str, int], asyncssh.SSHListener] = {}  # url_to: another machine's port
        self._forward_lock = asyncio.Lock()
        self._reconnect_task: asyncio.Task[None] | None = None
        self._final_error: HostError | None = None
        self._closed = False
        self._wake = asyncio.Event()
        self._watchers: set[asyncio.Task[None]] = set()
        self._where = self._host if port is None else f"{self._host}:{port}"
        route_asyncssh_logging()

    # ------------------------------------------------------------------------------------------ connecting

    def _connect_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "keepalive_interval": self._keepalive[0],
            "keepalive_count_max": self._keepalive[1],
            "connect_timeout": self._connect_timeout,
        }
        if self._port is not None:
            kwargs["port"] = self._port
        if self._user:
            kwargs["username"] = self._user
        if self._identity:
            kwargs["client_keys"] = [self._identity]
        if self._known_hosts:
            kwargs["known_hosts"] = self._known_hosts
        if self._ssh_config:
            kwargs["config"] = [self._ssh_config]
        if not self._agent:
            kwargs["agent_path"] = None
        return kwargs

    def _config_paths(self) -> list[str] | tuple[()]:
        """The ssh config to read: --ssh-config, else `()`: asyncssh's default, ~/.ssh/config."""
        return [self._ssh_config] if self._ssh_config else ()

    async def _options(self) -> asyncssh.SSHClientConnectionOptions:
        # `construct` reads no ssh config unless told to, while `connect` reads ~/.ssh/config by default: pass
        # the same config, so the HostName, Port and UserKnownHostsFile here are the ones the connection uses.
        kwargs = self._connect_kwargs()
        kwargs["config"] = self._config_paths()
        options: asyncssh.SSHClientConnectionOptions = await asyncssh.SSHClientConnectionOptions.construct(
            None, host=self._host, **kwargs
        )
        return options

    async def _key_target(self) -> KeyTarget:
        try:
            return key_target(self._host, await self._options())
        except Exception:  # a config that cannot be read fails the connect itself, with its own line
            files = (self._known_hosts,) if self._known_hosts else (os.path.expanduser(DEFAULT_KNOWN_HOSTS),)
            return KeyTarget(self._host, self._host, self._port or 22, None, files)

    async def _open(self) -> asyncssh.SSHClientConnection:
        """One connection attempt; every failure becomes a HostError with one clear line."""
        if self._identity and not os.path.isfile(self._identity):
            raise HostAuthError(f"identity file {self._identity} not found: check --identity")
        if self._known_hosts and not os.path.exists(self._known_hosts):
            raise HostAuthError(f"known_hosts file {self._known_hosts} not found: check --known-hosts")
        if self._ssh_config and not os.path.exists(self._ssh_config):
            raise HostAuthError(f"ssh config {self._ssh_config} not found: check --ssh-config")
        generation = self._generation + 1
        kwargs = self._connect_kwargs()
        target = await self._key_target()
        if target.strict_files and not self._known_hosts:
            # A UserKnownHostsFile that does not exist yet is empty, as ssh reads it (asyncssh would fail on it
            # with a bare ENOENT): the key is then unknown, and the message names the file and creates it.
            kwargs["known_hosts"] = trusted_keys(target)
        try:
            conn = await asyncssh.connect(self._host, client_factory=lambda: _Client(self, generation), **kwargs)
        except asyncssh.HostKeyNotVerifiable:
            raise await self._host_key_error(target) from None
        except asyncssh.PermissionDenied:
            who = f"{self._user}@" if self._user else ""
            raise HostAuthError(
                f"{who}{self._where}: authentication refused: check --identity, your ssh-agent and --user"
            ) from None
        except socket.gaierror:
            raise HostUnreachable(
                f"cannot resolve host name {self._host!r}: check the name or your ssh config"
            ) from None
        except ConnectionRefusedError:
            raise HostUnreachable(
                f"{self._where}: connection refused: is sshd running there, and is --ssh-port right?"
            ) from None
        except (asyncio.TimeoutError, TimeoutError):
            raise HostUnreachable(f"{self._where}: timed out connecting ({self._connect_timeout:g} s)") from None
        except asyncssh.DisconnectError as exc:
            proxy = await self._proxy_command()
            if proxy:
                raise HostUnreachable(
                    f"{self._where}: ProxyCommand `{proxy}` ended before the SSH handshake ({exc.reason}): "
                    "run it by hand to see why, or fix ProxyCommand in your ssh config"
                ) from None
            raise HostUnreachable(f"{self._where}: SSH connection failed: {exc.reason}") from None
        except OSError as exc:
            proxy = await self._proxy_command()
            if proxy and exc.errno not in (errno.ENOENT, errno.EACCES, errno.ENOEXEC):
                raise HostUnreachable(
                    f"{self._where}: ProxyCommand `{proxy}` ended before the SSH handshake ({exc.strerror or exc}): "
                    "run it by hand to see why, or fix ProxyCommand in your ssh config"
                ) from None
            if proxy:
                raise HostUnreachable(
                    f"{self._where}: ProxyCommand `{proxy}` could not be started: {exc.strerror or exc}: "
                    "fix ProxyCommand in your ssh config"
                ) from None
            raise HostUnreachable(f"{self._where}: cannot connect: {exc.strerror or exc}") from None
        except (asyncssh.Error, ValueError, asyncssh.KeyImportError) as exc:
            raise HostAuthError(f"{self._where}: SSH setup failed: {exc}") from None
        self._generation = generation
        return conn

    async def _proxy_command(self) -> str:
        """The ProxyCommand this connection goes through (from the ssh config), "" when none."""
        try:
            proxy = (await self._options()).proxy_command
        except Exception:  # the connect already failed; this is only for the message
            return ""
        if not proxy:
            return ""
        return proxy if isinstance(proxy, str) else " ".join(shlex.quote(arg) for arg in proxy)

    async def _host_key_error(self, target: KeyTarget) -> HostAuthError:
        """Unknown key: its fingerprint and how to trust it. Changed key: refuse loudly."""
        key: asyncssh.SSHKey | None = None
        fetch_error = ""
        try:
            # The typed name and the same config, so a ProxyCommand or ProxyJump is taken as the connection takes it.
            key = await within(
                asyncssh.get_server_host_key(
                    self._host, self._port if self._port is not None else (), config=self._config_paths()
                ),
                self._connect_timeout,
            )
        except (OSError, asyncssh.Error, asyncio.TimeoutError, ValueError) as exc:
            fetch_error = str(exc) or type(exc).__name__
        listing = listing_file(target)
        if listing is not None:
            return HostAuthError(changed_key_message(target, listing, key, fetch_error))
        return HostAuthError(unknown_key_message(target, key, fetch_error or "no key offered"))

    async def connect(self) -> None:
        if self._conn is not None and not self._conn.is_closed():
            return
        if self._final_error is not None:
            raise self._final_error
        self._closed = False
        self._emit_connection(ConnectionState("connecting", self.name))
        try:
            self._conn = await self._open()
        except HostAuthError as exc:
            self._final_error = exc
            self._emit_connection(ConnectionState("failed", str(exc)))
            raise
        self._emit_connection(ConnectionState("connected", self.name))
        self._notify()

    def _notify(self) -> None:
        self._wake.set()
        self._wake = asyncio.Event()

    def _on_lost(self, generation: int, exc: Exception | None) -> None:
        if generation != self._generation or self._closed:
            return
        self._conn = None
        for listener in [*self._forwards.values(), *self._far_forwards.values()]:
            listener.close()
        self._forwards.clear()
        self._far_forwards.clear()
        reason = str(exc) if exc else "closed by the server"
        self._emit_connection(ConnectionState("reconnecting", f"connection lost: {reason}"))
        if self._reconnect_task is None or self._reconnect_task.done():
            self._reconnect_task = asyncio.get_running_loop().create_task(self._reconnect())
        self._notify()

    async def _reconnect(self) -> None:
        """Reconnect with capped exponential backoff and jitter; never retry auth or host-key failures."""
        for delay in backoff_delays(self._backoff[0], self._backoff[1]):
            await asyncio.sleep(delay)
            if self._closed:
                return
            try:
                self._conn = await self._open()
            except HostAuthError as exc:
                self._final_error = exc
                self._emit_connection(ConnectionState("failed", str(exc)))
                self._notify()
                return
            except HostUnreachable as exc:
                self._emit_connection(ConnectionState("reconnecting", str(exc)))
                continue
            self._emit_connection(ConnectionState("connected", f"{self.name} (reconnected)"))
            self._notify()
            return

    async def _ready(self, wait: float | None) -> asyncssh.SSHClientConnection:
        """The live connection, waiting up to `wait` s for a reconnect in progress."""
        loop = asyncio.get_running_loop()
        deadline = None if wait is None else loop.time() + wait
        while True:
            if self._final_error is not None:
                raise self._final_error
            if self._closed:
                raise HostError(f"{self.name}: connection closed")
            conn = self._conn
            if conn is not None and not conn.is_closed():
                return conn
            if self._reconnect_task is None and conn is None:
                await self.connect()  # never connected yet: connect now (raises HostError with one line)
                continue
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                raise HostUnreachable(f"{self.name}: connection lost; reconnecting")
            try:
                await within(self._wake.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    async def close(self) -> None:
        self._closed = True
        if self._reconnect_task is not None:
            self._reconnect_task.cancel()
        for listener in [*self._forwards.values(), *self._far_forwards.values()]:
            listener.close()
        self._forwards.clear()
        self._far_forwards.clear()
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            try:
                await wait_at_most(conn.wait_closed(), 5.0)
            except _LINK_ERRORS:
                pass
        self._notify()

    # ------------------------------------------------------------------------------------------- commands

    async def _slot(self, timeout: float | None) -> None:
        try:
            await within(self._sessions.acquire(), timeout)
        except asyncio.TimeoutError:
            raise HostUnreachable(f"{self.name}: all SSH channels busy") from None

    async def _channel(
        self, command: str, wait: float, input: bytes | None
    ) -> tuple[asyncssh.SSHClientConnection, asyncssh.SSHClientProcess[bytes]]:
        """Open an exec channel running `command`, waiting up to `wait` s for a reconnect if the link just died.

        A channel that never opened ran nothing, so trying again on the new connection is safe."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            conn = await self._ready(max(0.0, deadline - loop.time()))
            await self._slot(max(0.1, deadline - loop.time()))
            try:
                proc = await conn.create_process(wrap_sh(command), input=input, encoding=None)
            except (asyncssh.ChannelOpenError, *_LINK_ERRORS) as exc:
                self._sessions.release()
                reason = getattr(exc, "reason", str(exc))
                if isinstance(exc, asyncssh.ChannelOpenError) and not conn.is_closed() and "closed" not in reason:
                    raise HostUnreachable(f"{self.name}: cannot open an SSH channel: {reason}") from None
                if loop.time() >= deadline:
                    raise HostUnreachable(f"{self.name}: connection lost; reconnecting") from None
                await asyncio.sleep(0.05)  # let the loss land, then wait for the reconnect
                continue
            watcher = loop.create_task(self._release_when_closed(proc))
            self._watchers.add(watcher)  # a strong reference: the loop keeps only weak ones
            watcher.add_done_callback(self._watchers.discard)
            return conn, proc

    async def run(self, command: str, *, input: bytes | None = None, timeout: float | None = 30.0) -> CommandResult:
        conn, proc = await self._channel(command, timeout if timeout is not None else 30.0, input)
        try:
            if input is None:
                proc.stdin.write_eof()  # like LocalHost: a short command reading stdin sees EOF, not a hang
            result = await proc.wait(check=False, timeout=timeout)
        except asyncssh.TimeoutError:
            raise TimeoutError(f"command timed out after {timeout} s") from None
        except _LINK_ERRORS as exc:
            raise HostUnreachable(f"{self.name}: connection lost ({exc})") from None
        finally:
            proc.close()
        if result.exit_status is None and result.exit_signal is None and conn.is_closed():
            raise HostUnreachable(f"{self.name}: connection lost while running a command")
        returncode = None if result.exit_status is None and result.exit_signal is None else result.returncode
        return CommandResult(returncode, _as_bytes(result.stdout), _as_bytes(result.stderr))

    async def start(self, command: str, *, input: bytes | None = None) -> RemoteProcess:
        conn, proc = await self._channel(command, 10.0, input)
        return SshProcess(proc, conn, self.name)

    async def _release_when_closed(self, proc: asyncssh.SSHClientProcess[bytes]) -> None:
        try:
            await proc.wait_closed()
        except BaseException:
            pass
        finally:
            self._sessions.release()

    async def http_base_url(self, port: int) -> str:
        async with self._forward_lock:
            conn = await self._ready(10.0)
            listener = self._forwards.get(port)
            if listener is None:
                try:
                    listener = await _forward_to_loopback(conn, int(port))
                except _LINK_ERRORS as exc:
                    raise HostUnreachable(f"{self.name}: cannot forward port {port}: {exc}") from None
                except asyncssh.Error as exc:
                    raise HostUnreachable(f"{self.name}: cannot forward port {port}: {exc}") from None
                self._forwards[port] = listener
            return f"http://127.0.0.1:{listener.get_port()}"

    async def url_to(self, host: str, port: int) -> str:
        """A local port forward to HOST:PORT as this machine reaches it (a compute node from a login node)."""
        async with self._forward_lock:
            conn = await self._ready(10.0)
            listener = self._far_forwards.get((host, port))
            if listener is None:
                try:
                    listener = await conn.forward_local_port("127.0.0.1", 0, host, int(port))
                except (*_LINK_ERRORS, asyncssh.Error) as exc:
                    raise HostUnreachable(f"{self.name}: cannot forward to {host}:{port}: {exc}") from None
                self._far_forwards[(host, port)] = listener
            return f"http://127.0.0.1:{listener.get_port()}"


# Where a forwarded connection goes on the host: IPv4 loopback, else IPv6 loopback when nothing accepts there
# (a server started with `--host ::1`): one channel open more, and only while IPv4 refuses.
LOOPBACKS = ("127.0.0.1", "::1")


async def _forward_to_loopback(conn: asyncssh.SSHClientConnection, port: int) -> asyncssh.SSHListener:
    """A listener on 127.0.0.1 here whose every connection is tunnelled to PORT on the host's loopback.

    asyncssh's forward_local_port with the destination chosen per connection (its own forwarder underneath)."""

    async def tunnel(
        session_factory: Callable[[], asyncssh.SSHTCPSession[bytes]], orig_host: str, orig_port: int
    ) -> tuple[asyncssh.SSHTCPChannel[bytes], asyncssh.SSHTCPSession[bytes]]:
        refused: asyncssh.ChannelOpenError | None = None
        for host in LOOPBACKS:
            try:
                return await conn.create_connection(session_factory, host, port, orig_host, orig_port)
            except asyncssh.ChannelOpenError as exc:
                if exc.code != asyncssh.OPEN_CONNECT_FAILED:
                    raise
                refused = refused or exc
        assert refused is not None
        raise refused

    return await create_tcp_forward_listener(conn, asyncio.get_running_loop(), tunnel, "127.0.0.1", 0)


def _as_bytes(data: bytes | str | None) -> bytes:
    """A channel's output: bytes (our channels are opened without an encoding); text only if that ever changes."""
    if isinstance(data, str):
        return data.encode("utf-8", "surrogateescape")
    return bytes(data or b"")
