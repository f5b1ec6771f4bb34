"""The command line as frozen values: what the layers below `tui/commands` are handed instead of argparse."""

from __future__ import annotations

import argparse

from tui.core.config import WatchConfig
from tui.sources.connect import HostSpec


def host_spec(args: argparse.Namespace, host: str | None = None) -> HostSpec:
    """Where to connect: `host` (a deployment member's), else the command line's HOST, with its SSH options."""
    return HostSpec(
        host=host if host is not None else args.host,
        ssh_port=getattr(args, "ssh_port", None),
        user=getattr(args, "user", None),
        identity=getattr(args, "identity", None),
        known_hosts=getattr(args, "known_hosts", None),
        ssh_config=getattr(args, "ssh_config", None),
    )


def watch_config(args: argparse.Namespace) -> WatchConfig:
    """The options of one watched server (`HOST`, `wait HOST`)."""
    return WatchConfig(
        port=args.port,
        log=args.log,
        remote_python=getattr(args, "remote_python", "python3"),
        sim_gpus=getattr(args, "sim_gpus", None),
        launch=getattr(args, "launch", None),
        cwd=getattr(args, "cwd", None),
        read_only=bool(getattr(args, "read_only", False)),
        health=not getattr(args, "no_health", False),
        stall_after=getattr(args, "stall_after", None),
    )
