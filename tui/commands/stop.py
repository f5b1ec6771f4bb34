"""`sglang-tui stop HOST --port N [--log PATH] [--force]`: headless terminate (or kill) of the server.

Exit codes from the one table (tui/core/exitcodes.py): 0 only when it stopped the server and every process of
it is gone and its GPU memory is released (per the GPU probe); 1 when it could not stop it or memory is still
held (with what is still alive or held, and where); 2 when the port and the log name two different servers
(nothing is stopped); 4 when the host cannot be reached; 5 when the server's processes cannot be seen (another
uid's /proc): nothing was stopped, and "nothing found" would be a lie; 6 when no server was found on the port /
log.

The port and the log naming two different servers is "bad arguments": the contradiction is in what was asked
(typed, or taken from config.toml), not on the host: both servers are there and running, so 6 ("nothing
found") would be false, and 1 ("failed") says a stop was tried. Like an argparse error it is decided before
anything is signalled, and the same arguments can never succeed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from tui.commands.config import host_spec
from tui.commands.stop_report import port_named, report
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_CANNOT_SEE, EXIT_CONNECT, EXIT_FAILED, EXIT_NOTHING, EXIT_OK
from tui.sources.connect import make_host
from tui.sources.control import ServerControl
from tui.sources.host import HostError


async def stop(args: argparse.Namespace) -> int:
    host = make_host(host_spec(args))
    try:
        await host.connect()
    except HostError as exc:
        print(f"sglang-tui stop: cannot connect to {args.host}: {exc}", file=sys.stderr)
        return EXIT_CONNECT
    try:
        control = ServerControl(
            host, port=args.port, log_path=args.log, remote_python=args.remote_python, sim_gpus=args.sim_gpus,
            grace_s=args.grace,
        )  # fmt: skip
        try:
            disagree = await control.disagreement() if port_named(args) else None
        except (HostError, TimeoutError) as exc:
            print(f"sglang-tui stop: cannot look for the server on {args.host}: {exc}", file=sys.stderr)
            return EXIT_CONNECT
        if disagree is not None:
            print(f"sglang-tui stop: {disagree}; nothing stopped (give the port and the log of one server)",
                  file=sys.stderr)  # fmt: skip
            return EXIT_BAD_ARGS
        result = await (control.kill() if args.force else control.terminate())
    finally:
        await host.close()
    where = f"{args.host} port {args.port}" if port_named(args) or not args.log else f"{args.host} log {args.log}"
    if result.found == "nothing":
        log = f" / log {args.log}" if args.log else ""
        print(f"sglang-tui stop: no server found on port {args.port}{log}: nothing stopped", file=sys.stderr)
        return EXIT_NOTHING
    if result.found == "cannot_see":
        print(f"sglang-tui stop: {result.detail}: nothing stopped", file=sys.stderr)
        return EXIT_CANNOT_SEE
    print(report(result, where, args.force), file=sys.stdout if result.ok else sys.stderr)
    return EXIT_OK if result.ok else EXIT_FAILED


def run(args: argparse.Namespace) -> int:
    if args.port is not None and not 0 < args.port < 65536:
        print(f"sglang-tui stop: --port {args.port} is not a TCP port (1-65535)", file=sys.stderr)
        return EXIT_BAD_ARGS
    if getattr(args, "grace", 0.0) < 0:
        print(f"sglang-tui stop: --grace {args.grace:g} is below 0 seconds", file=sys.stderr)
        return EXIT_BAD_ARGS
    from tui.core.slurmjob import is_slurm_target

    if isinstance(args.host, str) and is_slurm_target(args.host):
        from tui.commands import stop_slurm  # inside the job's allocation, then scancel

        return stop_slurm.run(args)
    if len(getattr(args, "hosts", None) or ()) > 1 or getattr(args, "deployment", None):
        from tui.commands import stop_deployment  # every node / member, each confirmed

        return stop_deployment.run(args)
    return asyncio.run(stop(args))
