"""Build the right Host from where to connect (`local` means no SSH)."""

from __future__ import annotations

from dataclasses import dataclass

from tui.sources.host import Host


@dataclass(frozen=True)
class HostSpec:
    """Where to connect: `local`, or an SSH destination with the options the command line gave (None: from
    ~/.ssh/config or SSH's defaults). Built by the command layer (tui/commands/config.py)."""

    host: str
    ssh_port: int | None = None
    user: str | None = None
    identity: str | None = None
    known_hosts: str | None = None
    ssh_config: str | None = None


def make_host(spec: HostSpec) -> Host:
    """`local` → LocalHost; anything else → SshHost with the SSH options given."""
    if spec.host == "local":
        from tui.sources.local import LocalHost

        return LocalHost()
    from tui.sources.ssh import SshHost

    return SshHost(
        spec.host,
        port=spec.ssh_port,
        user=spec.user,
        identity=spec.identity,
        known_hosts=spec.known_hosts,
        ssh_config=spec.ssh_config,
    )
