"""`sglang-tui stop slurm:JOBID` (and `LOGIN/slurm:JOBID`): stop the server inside the job's allocation, node 0
first, as `stop` stops any server (TERM its group, --grace, KILL, its group and descendants swept, GPU memory
confirmed on each node), then `scancel` the job and wait until squeue no longer shows it: only when nothing
else runs in it. A job that runs another SGLang server (two models on one node), or a step the user started
(a benchmark, a router), is kept running, and the line names what runs there and how to cancel it anyway
(`--cancel-job`). With --port, only the server on that port is stopped: on each node, the server whose
port listens there or whose command line names it (tui/sources/slurm_procs.server_target).

Why inside the allocation first (SGLang issue #23627): a scheduler whose parent died outlives the job step's
tracking and keeps its GPU memory after `scancel`; once the job is gone nothing can reach that node any more.
So the batch script is paused (SIGSTOP) while the server stops, because a script whose server ended would end
the job, and its allocation with it, before every node is confirmed. When something survives, the job is
kept (paused) and the line says what is left, where, and how to finish by hand.

Exit 0: every node stopped and free, the job gone (or kept for what else runs in it). 1: something survived, a GPU is still held, or the job did
not go. 4: the login node or the job's nodes cannot be reached. 6: no such running job, or no SGLang process
in it (nothing stopped, the job left as it was).
"""

from __future__ import annotations

import asyncio
import shlex
import sys

from tui.commands import slurm_members
from tui.commands.options import StopOptions
from tui.commands.stop_report import report, stop_order
from tui.core.answerer import printable
from tui.core.events import ControlResult, ServerProcess
from tui.core.exitcodes import EXIT_CONNECT, EXIT_FAILED, EXIT_NOTHING, EXIT_OK
from tui.sources.host import HostError
from tui.sources.slurm_procs import SlurmControl

GONE_WITHIN_S = 60.0  # scancel: Slurm's KillWait (30 s by default) and then some


def _say(line: str) -> None:
    print(f"sglang-tui stop: {printable(line, 600)}", file=sys.stderr)


async def _stop_job(opts: StopOptions, members: slurm_members.SlurmMembers) -> int:
    job_id = members.job_id
    controls = [
        SlurmControl(h, job_id=job_id, node=s.host, port=s.process_port, remote_python=opts.server.remote_python,
                     sim_gpus=s.sim_gpus, grace_s=opts.grace)
        for s, h in zip(members.specs, members.hosts, strict=True)
    ]  # fmt: skip
    nodes = [s.host for s in members.specs]
    batch = nodes.index(members.job.job.batch_host) if members.job.job.batch_host in nodes else 0
    try:
        held = await controls[batch].hold_batch()
    except (HostError, TimeoutError) as exc:
        _say(f"cannot enter slurm job {job_id} on {nodes[batch]}: {exc}")
        return EXIT_CONNECT
    found = await asyncio.gather(*(c.process_state_now() for c in controls), return_exceptions=True)
    if not any(isinstance(f, ServerProcess) and f.alive for f in found):
        await controls[batch].release_batch(held)
        unreachable = [f"{n}: {f}" for n, f in zip(nodes, found, strict=True) if isinstance(f, BaseException)]
        if unreachable:
            _say(f"cannot look into slurm job {job_id}: {'; '.join(unreachable)}: nothing stopped")
            return EXIT_CONNECT
        _say(f"no SGLang process in slurm job {job_id} (on {', '.join(nodes)}): nothing stopped, the job left running")
        return EXIT_NOTHING
    results: dict[int, ControlResult] = {}
    for i in stop_order(members.specs):  # node 0 first: its graceful stop is what stops the other nodes
        there = found[i]
        if isinstance(there, ServerProcess) and not there.alive:
            continue  # the server asked for does not run on this node (another server of the job may)
        results[i] = await (controls[i].kill() if opts.force else controls[i].terminate())
    for i, spec in enumerate(members.specs):
        if i not in results:
            continue
        before = found[i]
        seen = f", {len(before.pids)} processes found" if isinstance(before, ServerProcess) and before.alive else ""
        print(report(results[i], f"{spec.name} ({spec.host}, slurm job {job_id}{seen})", opts.force),
              file=sys.stdout if results[i].ok else sys.stderr)  # fmt: skip
    left = [(members.specs[i].host, r) for i, r in sorted(results.items()) if not r.ok]
    if left:
        _kept(job_id, left, held)
        return EXIT_FAILED
    if not opts.cancel_job:
        kept = await _still_running(controls, nodes)
        if kept:
            await controls[batch].release_batch(held)
            print(f"kept slurm job {job_id} running: still in it {kept}; to cancel it anyway: "
                  f"sglang-tui stop {shlex.quote(members.shown or str(members.target))} --cancel-job (or scancel {job_id})")  # fmt: skip
            return EXIT_OK
    await asyncio.gather(*(h.close() for h in members.hosts), return_exceptions=True)  # no step of ours lingers
    try:
        await members.cli.mark_stopping(job_id)  # a wait or a board watching the job says stopped, not failed
        await members.cli.cancel(job_id)
        state = await members.cli.wait_gone(job_id, GONE_WITHIN_S)
    except (HostError, TimeoutError) as exc:
        _say(f"the server is stopped, but scancel {job_id} failed: {exc}")
        return EXIT_FAILED
    if state:
        _say(f"the server is stopped and scancel {job_id} was sent, but the job is still {state} "
             f"after {GONE_WITHIN_S:g} s (squeue -j {job_id})")  # fmt: skip
        return EXIT_FAILED
    print(f"cancelled slurm job {job_id}: every node stopped and free, the job gone from squeue")
    return EXIT_OK


async def _still_running(controls: list[SlurmControl], nodes: list[str]) -> str:
    """What still runs in the job after the stop, on every node ("" when nothing: the job may go):
    "on sgtn1: pid 123 sglang::scheduler_TP0 (step 1), pid 130 python bench.py (step 2)"."""
    looked = await asyncio.gather(*(c.still_running() for c in controls), return_exceptions=True)
    parts = []
    for node, procs in zip(nodes, looked, strict=True):
        if isinstance(procs, BaseException):
            parts.append(f"on {node}: cannot look ({procs})")
            continue
        if procs:
            shown = ", ".join(f"pid {p.proc.pid} {p.cmdline[:60].strip()} (step {p.step})" for p in procs[:4])
            more = f" and {len(procs) - 4} more" if len(procs) > 4 else ""
            parts.append(f"on {node}: {shown}{more}")
    return "; ".join(parts)


def _kept(job_id: str, left: list[tuple[str, ControlResult]], held: dict[int, int]) -> None:
    """What survived, where, and how to finish: the job is kept so that its nodes stay reachable."""
    for node, result in left:
        pids = " ".join(str(p) for p in result.survivors) or " ".join(str(pid) for _, pid, _ in result.gpu_held)
        if pids:
            _say(f"left on {node}: pids {pids}; finish with: srun --jobid={job_id} --overlap -w {shlex.quote(node)} "
                 f"-N1 -n1 kill -9 {pids}")  # fmt: skip
    paused = f" (its batch script paused: pid {', '.join(map(str, held))})" if held else ""
    _say(f"slurm job {job_id} is kept running{paused} so that its nodes stay reachable; "
         f"once they are free: scancel {job_id}")  # fmt: skip


async def _main(opts: StopOptions) -> int:
    return await slurm_members.with_job(
        opts.target, opts.server, _say, lambda members: _stop_job(opts, members), notes=False
    )


def run(opts: StopOptions) -> int:
    return asyncio.run(_main(opts))
