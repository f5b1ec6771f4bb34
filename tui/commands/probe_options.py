"""`probe`'s options, read from argparse's Namespace apart from tui/commands/options.py (which re-exports them):
a probe is a fresh process each period (kubelet, systemd, Slurm scripts), and the other commands' option records
and what they load (deployments, Slurm jobs, the simulator's parameters) would be most of its start (issue 32)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tui.commands.targets import ServerTarget, parse_target
from tui.core.config import Ssh
from tui.core.record import Record, record
from tui.core.settings import Given, Settings
from tui.history.paths import history_path


class OptionsError(Exception):
    """Options that cannot go together; str() is the one line to print."""


@record
class ProbeOptions(Record):
    """`sglang-tui probe TARGET (--ready | --alive)`: one look, one verdict."""

    server: ServerTarget
    ssh: Ssh
    ready: bool  # --ready (else --alive)
    history: Path | None = None
    json: bool = False
    stall_after: float | None = None
    timeout: float = 1.0
    health: bool = True


def ssh_of(ns: argparse.Namespace) -> Ssh:
    return Ssh(ns.ssh_port, ns.user, ns.identity, ns.known_hosts, ns.ssh_config)


def history_of(ns: argparse.Namespace) -> Path | None:
    return history_path(ns.history, off=ns.no_history)


def probe_options(ns: argparse.Namespace, settings: Settings) -> ProbeOptions:
    if len(ns.host) != 1:
        raise OptionsError("give one TARGET (HOST, HOST:PORT or HOST:PORT:LOG); a probe judges one server")
    given = Given(port=ns.port, log=ns.log).over(settings.for_host(ns.host[0]))
    try:
        server = parse_target(ns.host[0], port=given.port, log=given.log)
    except ValueError as err:
        raise OptionsError(str(err)) from None
    return ProbeOptions(server, ssh_of(ns), ns.ready, history_of(ns), ns.json, ns.stall_after, ns.timeout,
                        not ns.no_health)  # fmt: skip
