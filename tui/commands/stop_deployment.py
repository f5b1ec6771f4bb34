"""`sglang-tui stop HOST0 HOST1 …` (or `stop --deployment FILE`): stop every member, confirm every GPU.

Each member's server is found first (by port, log writers, pidfile or run marker, as `stop HOST` does), so
that a node whose processes end on their own is still confirmed. Then node 0 (or, for PD, the router and
then the servers) is stopped: node 0's graceful stop broadcasts SGLang's ShutdownReq, the only thing that
stops a non-zero node's schedulers, which ignore SIGTERM. Then every other member is stopped itself:
whatever remains is signalled, and its GPU memory is confirmed released. Exit 0 only when every member is
stopped and free, 1 otherwise, 2 when a member's port and log name two different servers (nothing is
stopped), 4 when a host cannot be reached, 5 when it is only because a member's processes cannot be seen
(another uid's: nothing was stopped there, as `stop HOST` says), 6 when no member had a server.
"""

from __future__ import annotations

import asyncio
import sys
from functools import partial

from tui.commands.members import with_members
from tui.commands.options import StopOptions
from tui.commands.stop_report import report, stop_order
from tui.core.events import ControlResult
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_CANNOT_SEE, EXIT_FAILED, EXIT_NOTHING, EXIT_OK
from tui.sources.control import ServerControl
from tui.sources.deployment import MemberSpec
from tui.sources.host import Host


def _say(line: str) -> None:
    print(f"sglang-tui stop: {line}", file=sys.stderr)


async def _stop(opts: StopOptions) -> int:
    return await with_members(opts.target, opts.server, _say, partial(_stop_members, opts))


async def _stop_members(opts: StopOptions, specs: list[MemberSpec], hosts: list[Host]) -> int:
    controls = [
        ServerControl(
            h,
            port=s.process_port,
            log_path=s.log,
            remote_python=opts.server.remote_python,
            sim_gpus=s.sim_gpus,
            grace_s=opts.grace,
        )  # fmt: skip
        for s, h in zip(specs, hosts, strict=True)
    ]
    named = opts.target.port_named or opts.target.deployment is not None  # a deployment file names each port
    disagree = await asyncio.gather(*(c.disagreement() for c in controls if named), return_exceptions=True)
    lines = [f"{s.name} ({s.host}): {d}" for s, d in zip(specs, disagree, strict=False) if isinstance(d, str)]
    if lines:  # a member whose port and log name two servers: which one to stop is unknown, so none is
        for line in lines:
            print(f"sglang-tui stop: {line}", file=sys.stderr)
        print("sglang-tui stop: nothing stopped (give each member the port and the log of one server)",
              file=sys.stderr)  # fmt: skip
        return EXIT_BAD_ARGS
    found = await asyncio.gather(*(c.process_state_now() for c in controls), return_exceptions=True)
    results: dict[int, ControlResult] = {}
    for i in stop_order(specs):
        control = controls[i]
        results[i] = await (control.kill() if opts.force else control.terminate())
    for i, spec in enumerate(specs):
        before = found[i]
        seen = "" if isinstance(before, BaseException) or not before.alive else f" ({len(before.pids)} processes found)"
        where = f"{spec.name} ({spec.host} port {spec.port}){seen}"
        if results[i].found == "cannot_see":  # as `stop HOST`: it may run, under a uid whose processes we cannot read
            print(f"sglang-tui stop: {where}: {results[i].detail}: nothing stopped", file=sys.stderr)
            continue
        if results[i].found == "nothing" and not seen:  # as `stop HOST`: nothing found is not "stopped"
            log = f" / log {spec.log}" if spec.log else ""
            print(f"sglang-tui stop: no server found on {spec.name} ({spec.host} port {spec.port}{log}): "
                  "nothing stopped", file=sys.stderr)  # fmt: skip
            continue
        print(report(results[i], where, opts.force), file=sys.stdout if results[i].ok else sys.stderr)
    if any(not r.ok and r.found != "cannot_see" for r in results.values()):
        return EXIT_FAILED
    if any(r.found == "cannot_see" for r in results.values()):
        return EXIT_CANNOT_SEE  # the code `stop HOST` gives: nothing was stopped there, and it may run
    if all(r.found == "nothing" for r in results.values()) and not any(
        not isinstance(before, BaseException) and before.alive for before in found
    ):  # fmt: skip
        return EXIT_NOTHING
    return EXIT_OK


def run(opts: StopOptions) -> int:
    return asyncio.run(_stop(opts))
