"""`sglang-tui HOST0 HOST1 …` / `sglang-tui --deployment FILE`: the TUI over a whole deployment.

One Monitor per member (tui/sources/deployment.py), folded by the same MemberFolder as `wait`; the app is
watch only (stop a deployment with `sglang-tui stop HOST0 HOST1 …`)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

from tui.commands.members import with_members
from tui.commands.options import WatchOptions
from tui.core.control import ProcessWatchLike
from tui.sources.deployment import DeploymentMonitor, MemberSpec
from tui.sources.deployment_session import MemberFolder, deployment_monitor, deployment_of
from tui.sources.host import Host


def _say(line: str) -> None:
    print(f"sglang-tui: {line}", file=sys.stderr)


async def watch(opts: WatchOptions) -> int:
    return await with_members(opts.target, opts.server, _say, partial(_watch, opts))


async def _watch(
    opts: WatchOptions,
    specs: list[MemberSpec],
    hosts: list[Host],
    process_watch: Callable[[MemberSpec, Host], ProcessWatchLike] | None = None,
    more: Callable[[DeploymentMonitor], None] | None = None,
) -> int:
    from tui.ui.app import UiSources
    from tui.ui.deployment_app import DeploymentTui

    monitor = deployment_monitor(specs, hosts, opts.server.remote_python, process_watch)
    if more is not None:
        more(monitor)  # more facts of each member: a Slurm job's state each cycle
    dep = deployment_of(specs, opts.server.stall_after)
    folder = MemberFolder(dep, monitor.set_phase)  # each member's phase fed back to its own Monitor
    label = " ".join(s.host for s in specs) if len({s.host for s in specs}) > 1 else specs[0].host
    sources = UiSources(batches=_no_batches, control=None, host_label=label, port=specs[0].port)
    app = DeploymentTui(sources, dep, monitor.batches, folder)
    try:
        await app.run_async()
    finally:
        await monitor.close()
    return 0


async def _no_batches() -> Any:  # the app reads member batches instead (DeploymentTui._consume)
    return
    yield


async def watch_slurm(opts: WatchOptions) -> int:
    """The TUI over a Slurm job (`sglang-tui slurm:JOBID`): its nodes as a deployment (watch only)."""
    from tui.commands import slurm_members
    from tui.commands.wait_slurm import queued_first
    from tui.sources.slurm_jobs import QueueWatch, add_job_feeds
    from tui.sources.slurm_procs import SlurmProcessWatch

    async def body(members: slurm_members.SlurmMembers) -> int:
        job_id = members.job_id

        def watch(spec: MemberSpec, host: Host) -> SlurmProcessWatch:
            return SlurmProcessWatch(host, job_id=job_id, node=spec.host, port=spec.process_port)

        def feeds(monitor: DeploymentMonitor) -> None:
            add_job_feeds(monitor, QueueWatch(members.cli, [job_id]), job_id, [s.name for s in members.specs])
            if members.srt_dir is not None:  # an srtctl job: its benchmark's word, read once a cycle (issue 36)
                from tui.commands import srt_members

                monitor.add_stream(members.specs[0].name, srt_members.words(members.base, members.srt_dir, job_id))

        return await _watch(opts, members.specs, list(members.hosts), watch, feeds)

    ended = await queued_first(opts.target, opts.server, _say)  # a job still in the queue: waited for here
    if ended is not None:
        return ended
    # An srtctl job's workers as `wait` takes them: each once its log is there and names its port (a port taken
    # before that is srtctl's allocation, a guess: issue 36's flake watched a worker on a port it never used).
    return await slurm_members.with_job(opts.target, opts.server, _say, body, wait_for_workers=True)


def run(opts: WatchOptions) -> int:
    if opts.target.slurm:
        return asyncio.run(watch_slurm(opts))
    return asyncio.run(watch(opts))
