"""Build the right Host from the command line's parsed arguments (`local` means no SSH)."""

from __future__ import annotations

import argparse

from tui.sources.host import Host


def make_host(args: argparse.Namespace) -> Host:
    """`local` → LocalHost; anything else → SshHost with the SSH options given."""
    if args.host == "local":
        from tui.sources.local import LocalHost

        return LocalHost()
    from tui.sources.ssh import SshHost

    return SshHost(
        args.host,
        port=getattr(args, "ssh_port", None),
        user=getattr(args, "user", None),
        identity=getattr(args, "identity", None),
        known_hosts=getattr(args, "known_hosts", None),
        ssh_config=getattr(args, "ssh_config", None),
    )
