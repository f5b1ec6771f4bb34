"""`sglang-tui stop HOST --port N [--log PATH] [--force]`: headless terminate (or kill) of the server.

Exit 0 only when it stopped the server and every process of it is gone and its GPU memory is released (per
the GPU probe); 1 when it could not stop it or memory is still held (with what is still alive or held, and
where); 2 when the port and the log name two different servers (nothing is stopped); 3 when no server was
found on the port / log; 4 when the host cannot be reached; 5 when the server's processes cannot be seen
(another uid's /proc): nothing was stopped, and "nothing found" would be a lie.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from tui.commands.config import host_spec
from tui.core.events import ControlResult
from tui.sources.connect import make_host
from tui.sources.control import ServerControl
from tui.sources.host import HostError

EXIT_OK, EXIT_NOT_STOPPED, EXIT_NOTHING, EXIT_CONNECT, EXIT_CANNOT_SEE = 0, 1, 3, 4, 5
# The port and the log name two different servers: exit 2, "bad arguments" in DESIGN.md's one table. The
# contradiction is in what was asked (typed, or taken from config.toml), not on the host: both servers are
# there and running, so 3/6 ("nothing found") would be false, and 1 ("failed") says a stop was tried. Like an
# argparse error it is decided before anything is signalled, and the same arguments can never succeed.
EXIT_DISAGREE = 2


def report(result: ControlResult, where: str, forced: bool = False) -> str:
    """The lines printed for a stop: verdict, what happened, and anything left behind."""
    verb = "killed" if result.action == "kill" else "stopped"
    lines = [
        f"{verb} the server on {where}: {result.detail}" if result.ok else f"NOT stopped ({where}): {result.detail}"
    ]
    if result.survivors:
        lines.append("still alive: " + " ".join(map(str, result.survivors)))
    for gpu, pid, used in result.gpu_held:
        lines.append(f"GPU {gpu}: pid {pid} still holds {used / 2**30:.1f} GiB")
    if not result.ok:
        lines.append("inspect the pids above on the host" + ("" if forced else ", or try again with --force"))
    return "\n".join(lines)


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
            return EXIT_DISAGREE
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
    return EXIT_OK if result.ok else EXIT_NOT_STOPPED


def port_named(args: argparse.Namespace) -> bool:
    """The port was asked for (typed, or set in config.toml), not the built-in default: it must then name
    the same server as the log."""
    return not getattr(args, "port_defaulted", False)


def run(args: argparse.Namespace) -> int:
    if args.port is not None and not 0 < args.port < 65536:
        print(f"sglang-tui stop: --port {args.port} is not a TCP port (1-65535)", file=sys.stderr)
        return 2
    if getattr(args, "grace", 0.0) < 0:
        print(f"sglang-tui stop: --grace {args.grace:g} is below 0 seconds", file=sys.stderr)
        return 2
    from tui.core.slurmjob import is_slurm_target

    if isinstance(args.host, str) and is_slurm_target(args.host):
        from tui.commands import stop_slurm  # inside the job's allocation, then scancel

        return stop_slurm.run(args)
    if len(getattr(args, "hosts", None) or ()) > 1 or getattr(args, "deployment", None):
        from tui.commands import stop_deployment  # every node / member, each confirmed

        return stop_deployment.run(args)
    return asyncio.run(stop(args))
