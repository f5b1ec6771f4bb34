"""What `stop` says and decides for every kind of target (one server, a deployment, a Slurm job): the lines of a
stop's result and the order members stop in (whether the port was asked for is the options' Target.port_named)."""

from __future__ import annotations

from tui.core.events import ControlResult
from tui.sources.deployment import MemberSpec


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


def stop_order(specs: list[MemberSpec]) -> list[int]:
    """Indexes in stop order: node 0 (or the router) first, then the rest as listed."""
    first = [i for i, s in enumerate(specs) if s.role == "router" or (s.role == "node" and s.node_rank == 0)]
    return first + [i for i in range(len(specs)) if i not in first]
