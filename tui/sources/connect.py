"""Build the right Host from where to connect (`local` means no SSH)."""

from __future__ import annotations

from tui.core.config import HostSpec
from tui.sources.host import Host

__all__ = ["HostSpec", "make_host"]


def make_host(spec: HostSpec) -> Host:
    """`local` → LocalHost; anything else → SshHost with the SSH options given."""
    if spec.host == "local":
        from tui.sources.local import LocalHost

        return LocalHost()
    from tui.sources.ssh import SshHost

    return SshHost(
        spec.host,
        port=spec.ssh.port,
        user=spec.ssh.user,
        identity=spec.ssh.identity,
        known_hosts=spec.ssh.known_hosts,
        ssh_config=spec.ssh.config,
    )
