"""`sglang-tui wait slurm:JOBID` (and `LOGIN/slurm:JOBID`, `slurm:`): a Slurm job as a multi-node deployment,
node 0 first, every node watched inside the job's allocation (tui/sources/slurm.py), with the deployment's
verdict and exit codes (tui/commands/wait_deployment.py); 6 when there is no such running job."""

from __future__ import annotations

import asyncio
import time

from tui.commands import slurm_members
from tui.commands.options import WaitOptions
from tui.commands.wait_deployment import Reporting, wait_members
from tui.sources.deployment import MemberSpec
from tui.sources.host import Host
from tui.sources.slurm_procs import SlurmProcessWatch


async def _main(opts: WaitOptions, reporter: Reporting) -> int:
    started = time.monotonic()

    def say(line: str) -> None:
        reporter.say(f"sglang-tui wait: {line}")

    async def body(members: slurm_members.SlurmMembers) -> int:
        job_id = members.job_id

        def watch(spec: MemberSpec, host: Host) -> SlurmProcessWatch:
            return SlurmProcessWatch(host, job_id=job_id, node=spec.host, port=spec.process_port)

        return await wait_members(opts, reporter, started, members.specs, list(members.hosts), watch)

    return await slurm_members.with_job(opts.target, opts.server, say, body, timeout=opts.timeout)


def run(opts: WaitOptions, reporter: Reporting) -> int:
    return asyncio.run(_main(opts, reporter))
