"""First contact with a host key: which known_hosts files apply, and the one line that says what to do.

Strict host keys always: an unknown key is refused with its fingerprint (as `ssh` prints it) and the command
that adds exactly that key to the known_hosts file the connection reads; a changed key is refused loudly. Names
and ports are the ones the ssh config resolves to (`Host gpu1` / `HostName` / `Port` / `UserKnownHostsFile` /
`HostKeyAlias`), so the command works when pasted: ssh-keyscan reads no ssh config, so it is offered only when
the key itself could not be fetched.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

import asyncssh

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"

# The key type as `ssh` names it ("ED25519 key fingerprint is SHA256:…"), and the host's own key file.
_KEY_TYPES = {
    "ssh-ed25519": ("ED25519", "ed25519"),
    "ssh-ed448": ("ED448", "ed448"),
    "ssh-rsa": ("RSA", "rsa"),
    "ecdsa-sha2-nistp256": ("ECDSA", "ecdsa"),
    "ecdsa-sha2-nistp384": ("ECDSA", "ecdsa"),
    "ecdsa-sha2-nistp521": ("ECDSA", "ecdsa"),
    "sk-ssh-ed25519@openssh.com": ("ED25519-SK", "ed25519_sk"),
    "sk-ecdsa-sha2-nistp256@openssh.com": ("ECDSA-SK", "ecdsa_sk"),
}


@dataclass(frozen=True)
class KeyTarget:
    """Where a connection really goes and where its host key is looked up (after the ssh config)."""

    typed: str  # what the user typed (an alias, a name, an address)
    host: str  # HostName
    port: int
    alias: str | None  # HostKeyAlias: the name known_hosts files it under, without a port
    files: tuple[str, ...]  # the known_hosts files read, `~` expanded; the first is where a new key goes
    missing: tuple[str, ...] = ()  # of those, the ones that do not exist (read as empty, as ssh does)
    unchecked: bool = False  # `UserKnownHostsFile none`, which asyncssh takes as "accept any key"

    @property
    def strict_files(self) -> bool:
        """Whether asyncssh must be handed the keys itself: a file it would fail on, or no check at all."""
        return bool(self.missing) or self.unchecked

    @property
    def where(self) -> str:
        """`gpu1 (127.0.0.1:2299)`, or `127.0.0.1:2299` when nothing was resolved."""
        hostport = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        return hostport if self.typed == self.host else f"{self.typed} ({hostport})"

    @property
    def known_name(self) -> str:
        """The name of its line in known_hosts: `[host]:port` off port 22, as ssh and asyncssh match it."""
        if self.alias:
            return self.alias
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"


def listed_files(known_hosts: object) -> tuple[str, ...]:
    """The known_hosts files an asyncssh option names (a path or a list of paths), `~` expanded."""
    if isinstance(known_hosts, str):
        return (os.path.expanduser(known_hosts),)
    if isinstance(known_hosts, (list, tuple)):
        return tuple(os.path.expanduser(str(path)) for path in known_hosts if isinstance(path, (str, os.PathLike)))
    return ()


def key_target(typed: str, options: asyncssh.SSHClientConnectionOptions) -> KeyTarget:
    """The target as the ssh config resolves it (options built with the same config as the connection)."""
    files = listed_files(options.known_hosts) or (os.path.expanduser(DEFAULT_KNOWN_HOSTS),)
    missing = tuple(path for path in files if not os.path.exists(path))
    unchecked = options.known_hosts is None  # never silently: the default file is read instead, strictly
    alias = options.host_key_alias or None
    return KeyTarget(typed, str(options.host), int(options.port), alias, files, missing, unchecked)


def trusted_keys(target: KeyTarget) -> asyncssh.SSHKnownHosts:
    """The known hosts of the files that exist: what asyncssh checks the key against when strict_files."""
    return asyncssh.read_known_hosts([path for path in target.files if path not in target.missing])


def key_words(key: asyncssh.SSHKey) -> str:
    """`ED25519 key fingerprint is SHA256:…`, as `ssh` prints it."""
    name = _KEY_TYPES.get(key.get_algorithm(), (key.get_algorithm(), ""))[0]
    return f"{name} key fingerprint is {key.get_fingerprint('sha256')}"


def _append(line: str, file: str) -> str:
    """A shell line that appends LINE to FILE, making its directory first when there is none."""
    folder = os.path.dirname(file)
    mkdir = f"mkdir -p -m 700 {shlex.quote(folder)} && " if folder and not os.path.isdir(folder) else ""
    return f"{mkdir}echo {shlex.quote(line)} >> {shlex.quote(file)}"


def unknown_key_message(target: KeyTarget, key: asyncssh.SSHKey | None, fetch_error: str = "") -> str:
    """Refused: the fingerprint, how to check it, and the command that trusts exactly that key."""
    file = target.files[0]
    created = f"; {file} does not exist yet" if file in target.missing else ""
    if key is None:
        scan = f"ssh-keyscan -p {target.port} {shlex.quote(target.host)}"
        return (
            f"unknown host key for {target.where}, and its key could not be fetched ({fetch_error}){created}: "
            f"fetch it with `{scan}`, check its fingerprint (`ssh-keygen -lf -`), then add its line to {file}"
        )
    host_file = _KEY_TYPES.get(key.get_algorithm(), ("", ""))[1]
    check = f" (on the host: ssh-keygen -lf /etc/ssh/ssh_host_{host_file}_key.pub)" if host_file else ""
    algorithm, blob = key.export_public_key("openssh").decode("ascii").split()[:2]
    line = f"{target.known_name} {algorithm} {blob}"
    return (
        f"unknown host key for {target.where}: {key_words(key)}{created}. Check it{check}; if it matches, "
        f"trust it with: {_append(line, file)}"
    )


def listing_file(target: KeyTarget) -> str | None:
    """The known_hosts file that already holds a key (or a revocation) for this host: then the key CHANGED."""
    for path in target.files:
        if not os.path.isfile(path):
            continue
        try:
            found = asyncssh.match_known_hosts(
                path, target.alias or target.host, target.host, None if target.port == 22 else target.port
            )
        except (OSError, ValueError, asyncssh.Error):
            continue
        if found[0] or found[1] or found[2]:
            return path
    return None


def changed_key_message(target: KeyTarget, file: str, key: asyncssh.SSHKey | None, fetch_error: str = "") -> str:
    """Refused loudly: the new fingerprint, and how to forget the old key once the change is verified."""
    presents = key_words(key) if key is not None else f"a key that could not be fetched ({fetch_error})"
    return (
        f"HOST KEY CHANGED for {target.where}: the server now presents {presents}, which does not match {file}; "
        f"this may be a man-in-the-middle attack. If the host was really reinstalled, verify the new "
        f"fingerprint, then run: ssh-keygen -R {shlex.quote(target.known_name)} -f {shlex.quote(file)}"
    )
