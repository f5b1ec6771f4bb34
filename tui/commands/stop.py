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

import asyncio
import sys

from tui.commands.options import StopOptions
from tui.commands.stop_report import report
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_CANNOT_SEE, EXIT_CONNECT, EXIT_FAILED, EXIT_NOTHING, EXIT_OK
from tui.sources.connect import make_host
from tui.sources.control import controller
from tui.sources.host import HostError


async def stop(opts: StopOptions) -> int:
    where, port, log = opts.target.host, opts.server.port, opts.server.log
    host = make_host(opts.target.spec())
    try:
        await host.connect()
    except HostError as exc:
        print(f"sglang-tui stop: cannot connect to {where}: {exc}", file=sys.stderr)
        return EXIT_CONNECT
    try:
        control = controller(host, opts.server, grace_s=opts.grace)
        try:
            disagree = await control.disagreement() if opts.target.port_named else None
        except (HostError, TimeoutError) as exc:
            print(f"sglang-tui stop: cannot look for the server on {where}: {exc}", file=sys.stderr)
            return EXIT_CONNECT
        if disagree is not None:
            print(f"sglang-tui stop: {disagree}; nothing stopped (give the port and the log of one server)",
                  file=sys.stderr)  # fmt: skip
            return EXIT_BAD_ARGS
        result = await (control.kill() if opts.force else control.terminate())
    finally:
        await host.close()
    if result.found == "nothing":
        also = f" / log {log}" if log else ""
        print(f"sglang-tui stop: no server found on port {port}{also}: nothing stopped", file=sys.stderr)
        return EXIT_NOTHING
    if result.found == "cannot_see":
        print(f"sglang-tui stop: {result.detail}: nothing stopped", file=sys.stderr)
        return EXIT_CANNOT_SEE
    named = f"{where} port {port}" if opts.target.port_named or not log else f"{where} log {log}"
    print(report(result, named, opts.force), file=sys.stdout if result.ok else sys.stderr)
    return EXIT_OK if result.ok else EXIT_FAILED


def run(opts: StopOptions) -> int:
    if opts.target.slurm:
        from tui.commands import stop_slurm  # inside the job's allocation, then scancel

        return stop_slurm.run(opts)
    if opts.target.several:
        from tui.commands import stop_deployment  # every node / member, each confirmed

        return stop_deployment.run(opts)
    return asyncio.run(stop(opts))
