"""`sglang-tui HOST …`: connect, then run the TUI over the Monitor's batches with ServerControl for the keys."""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import replace

from tui.core.state import Readiness


def run(args: argparse.Namespace) -> int:
    return asyncio.run(watch(args))


async def watch(args: argparse.Namespace) -> int:
    """Exit 4 with one line when the host cannot be reached or refuses us; else run the app until `q`."""
    from tui.sources.connect import make_host
    from tui.sources.host import HostError

    try:
        host = make_host(args)
        await host.connect()
    except HostError as err:
        print(f"sglang-tui: cannot connect to {args.host}: {err}", file=sys.stderr)
        return 4
    except (OSError, ValueError) as err:
        print(f"sglang-tui: cannot connect to {args.host}: {err}", file=sys.stderr)
        return 4
    try:
        return await run_tui(host, args, host_label=args.host)
    finally:
        await host.close()


async def run_tui(host: object, args: argparse.Namespace, *, host_label: str, initial: Readiness | None = None,
                  control: object | None = None) -> int:
    """Build the Monitor (and the control, unless given) for a connected host, run the app, close the Monitor."""
    from tui.sources.control import ServerControl
    from tui.sources.monitor import Monitor
    from tui.ui.app import SglangTui, UiSources

    sim_gpus = getattr(args, "sim_gpus", None)
    if control is None:
        control = ServerControl(host, port=args.port, log_path=args.log, launch=getattr(args, "launch", None),  # type: ignore[arg-type]
                                cwd=getattr(args, "cwd", None), remote_python=args.remote_python, sim_gpus=sim_gpus)
    # One ServerControl for both: the Monitor's process state and the keys then agree on what the server is.
    monitor = Monitor(host, log_path=args.log, port=args.port, remote_python=args.remote_python, sim_gpus=sim_gpus,  # type: ignore[arg-type]
                      control=control)
    start = initial if initial is not None else Readiness()
    stall_after = getattr(args, "stall_after", None)
    if stall_after is not None:
        start = replace(start, stall_after=stall_after)
    sources = UiSources(batches=monitor.batches, control=None if args.read_only else control,  # type: ignore[arg-type]
                        host_label=host_label, phase_changed=monitor.set_phase)
    app = SglangTui(sources, read_only=args.read_only, initial=start)
    try:
        await app.run_async()
    finally:
        await monitor.close()
    return 0
