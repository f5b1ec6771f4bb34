"""`srt:LOGDIR` and `LOGIN/srt:LOGDIR`: an srtctl job (NVIDIA/srt-slurm 2.x) as a PD deployment. The log
directory is read where Slurm's commands are (this machine, or the login node over SSH; a shared filesystem, as
on every Slurm cluster srtctl runs on): its worker logs are the members (`prefill0`, `decode0`, …, each on its
node, reached inside the job's allocation as `slurm:` nodes are), the recipe (`config.yaml`) says how many of
each to expect, the job id comes from the directory (`{job_id}/logs`) or its `sweep_{job_id}.log`. Names:
tui/core/srtlayout.py (read from srt-slurm's source: docs/srtctl-layout.md).

Each worker's HTTP port is the one its log's `server_args` names, else srtctl's allocation (6100 + 32 k per
node). A worker that spans several nodes (srtctl: one srun and one log per node, `--nnodes`/`--node-rank`) is one
worker of several members: its leader (node 0, the one that serves) named as the worker, its other nodes
`prefill0.node1`, … each on its own log (srt.endpoints; core/deployment.py counts the worker once). The frontend, srtctl's
sglang-router (`{node}_router_{idx}.out`: srtlayout.routers), is the router member `router0` (the first one; nginx
and Dynamo's frontend are not read), its port from its log, else srtctl's. The benchmark is no member: its word (srtctl's log, benchmark.out) is
read once a cycle by the job watch (follow_word) and folded into the deployment (Deployment.with_benchmark).
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import AsyncIterator, Callable

from tui.core import slurmjob as sj
from tui.core import srtlayout as srt
from tui.core.config import Target, WatchConfig
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_CONNECT, EXIT_FAILED, EXIT_NOTHING
from tui.core.fold_job import ended_words, job_ended
from tui.sources.connect import make_host
from tui.sources.deployment import MemberSpec
from tui.sources.host import Host, HostError
from tui.sources.slurm import JobNodes, SlurmCli, SlurmError, SrunHost

LISTING_MARK = "SGLANG_TUI_SRT_CONFIG"
LOOK_EVERY_S = 2.0  # while the workers' logs appear, one listing every this many seconds
HEAD_BYTES = 262144  # how much of each worker log is read for its `server_args` port
PORTS_WITHIN_S = 180.0  # `wait` waits this long for every worker's log to name its port, then takes srtctl's
q = shlex.quote


async def list_dir(base: Host, log_dir: str) -> tuple[list[str], srt.Recipe] | str:
    """The log directory's file names and the recipe beside it (or in it), else why not (one line)."""
    d = q(log_dir)
    command = (
        f"cd {d} 2>/dev/null || {{ echo 'NODIR'; exit 0; }}; ls -1A; echo {LISTING_MARK}; "
        "cat ../config.yaml 2>/dev/null || cat config.yaml 2>/dev/null || true"
    )
    try:
        result = await base.run(command, timeout=30)
    except (HostError, TimeoutError) as exc:
        return f"cannot list {log_dir} on {base.name}: {exc}"
    text = result.stdout.decode("utf-8", "replace")
    if text.startswith("NODIR"):
        return f"no srtctl log directory {log_dir} on {base.name}"
    names, _, recipe = text.partition(LISTING_MARK + "\n")
    return [n for n in names.splitlines() if n], srt.parse_recipe(recipe)


async def open_srt(target: Target, server: WatchConfig, say: Callable[[str], None]) -> tuple[
    srt.SrtTarget, str, Host, SlurmCli
] | int:  # fmt: skip
    """Parse the target, connect where the directory is, find the job id; else the exit code after one line."""
    try:
        where = srt.parse_target(target.host)
    except srt.SrtTargetError as err:
        say(str(err))
        return EXIT_BAD_ARGS
    base = make_host(target.spec(where.login or "local"))
    try:
        await base.connect()
    except HostError as exc:
        await base.close()
        say(f"cannot connect to the login node {where.login}: {exc}")
        return EXIT_CONNECT
    listed = await list_dir(base, where.log_dir)
    if isinstance(listed, str):
        await base.close()
        say(f"{listed}: nothing to watch")
        return EXIT_NOTHING
    job_id = srt.job_id_of(where.log_dir) or srt.sweep_job_id(listed[0])
    if job_id is None:
        await base.close()
        say(f"{where.log_dir} names no Slurm job (srtctl writes {{job_id}}/logs/ with sweep_{{job_id}}.log in it)")
        return EXIT_BAD_ARGS
    return where, job_id, base, SlurmCli(base)


def specs_of(
    log_dir: str, found: list[srt.SrtWorker], heads: dict[str, str], server: WatchConfig,
    node_order: list[str] | tuple[str, ...] = (),
) -> list[MemberSpec]:  # fmt: skip
    """One member per worker and node, prefill first: a worker's leader (node 0) is the worker (`prefill0`), its
    port from its log, else srtctl's; a worker that spans several nodes has its other nodes as members of it
    (`prefill0.node1`, watched on their own logs, no /health of their own: srtctl gives them `--port 0`)."""
    ends = srt.endpoints(found, {w.log: srt.log_node_rank(heads.get(w.log, "")) for w in found}, node_order)
    allocated = srt.allocated_ports([e.leader for e in ends])
    sims = server.sim_gpus.split(",") if server.sim_gpus else []
    specs: list[MemberSpec] = []
    for e in ends:
        port = srt.log_port(heads.get(e.leader.log, "")) or allocated[e.name]
        bootstrap = srt.log_bootstrap_port(heads.get(e.leader.log, "")) if e.role == "prefill" else None
        multi = len(e.logs) > 1
        for rank, w in enumerate(e.logs):
            i = len(specs)
            gpus = (sims[i] if i < len(sims) else sims[-1]) if sims else None
            specs.append(MemberSpec(srt.node_member_name(e.name, rank), e.role if e.role != "agg" else "server",
                                    w.node, port, f"{log_dir.rstrip('/')}/{w.log}",
                                    node_rank=rank if multi else None, worker=e.name if multi else None,
                                    bootstrap_port=bootstrap if rank == 0 else None, sim_gpus=gpus))  # fmt: skip
    return specs


def _all_named(found: list[srt.SrtWorker], heads: dict[str, str]) -> bool:
    """Whether every worker's log has named its port (its `server_args` line; a worker's other nodes, which srtctl
    gives `--port 0`, name their node rank there)."""
    return all(
        srt.log_port(heads.get(w.log, "")) is not None or (srt.log_node_rank(heads.get(w.log, "")) or 0) > 0
        for w in found
    )


async def _heads(base: Host, log_dir: str, found: list[srt.SrtWorker]) -> dict[str, str]:
    """The first HEAD_BYTES of each worker log's `port` line (only the lines that name a port are kept)."""
    out: dict[str, str] = {}
    for w in found:
        path = q(f"{log_dir.rstrip('/')}/{w.log}")
        try:
            result = await base.run(f"head -c {HEAD_BYTES} {path} | grep -a -m 3 port || true", timeout=30)
        except (HostError, TimeoutError):
            continue
        out[w.log] = result.stdout.decode("utf-8", "replace")
    return out


async def _router(base: Host, log_dir: str) -> tuple[srt.SrtRouter | None, str, list[str]]:
    """The first sglang-router's log in the directory (the one the router poller watches), the lines of its head
    that name its port, and the directory's file names."""
    listed = await list_dir(base, log_dir)
    names = listed[0] if not isinstance(listed, str) else []
    router = next(iter(srt.routers(names)), None)
    if router is None:
        return None, "", names
    path = q(f"{log_dir.rstrip('/')}/{router.log}")
    command = f"head -c {HEAD_BYTES} {path} | grep -a -m 3 -e 'Starting router on' -e '--port' || true"
    try:
        result = await base.run(command, timeout=30)
    except (HostError, TimeoutError):
        return router, "", names
    return router, result.stdout.decode("utf-8", "replace"), names


async def workers_of(
    base: Host, cli: SlurmCli, job: sj.SlurmJob, log_dir: str, say: Callable[[str], None]
) -> list[srt.SrtWorker] | int:
    """The job's worker logs, once as many as the recipe asks for are there (srtctl starts its infrastructure
    first); while fewer, one line each time the count moves. An exit code when the job ends first (1, with
    Slurm's word) or the directory goes (6)."""
    said = ""
    while True:
        listed = await list_dir(base, log_dir)
        if isinstance(listed, str):
            say(listed)
            return EXIT_NOTHING
        names, recipe = listed
        found = srt.workers(names)
        have = srt.worker_counts(found)
        want = recipe.counts() if (recipe.disaggregated or recipe.agg_workers) else None
        short = srt.missing_nodes(srt.endpoints(found, {}), recipe)
        if found and (want is None or have == want) and not short:
            return found
        line = f"srtctl job {job.job_id}: worker logs {have}" + (f" of {want}" if want else "") + " so far"
        line += f" ({', '.join(short)})" if short and have == want else ""
        if line != said:
            say(line)
            said = line
        try:
            state = (await cli.queue([job.job_id]))[job.job_id]
        except SlurmError:
            state = None
        if state is not None and job_ended(state):
            say(ended_words(state) + " before its workers started")
            return EXIT_FAILED
        await asyncio.sleep(LOOK_EVERY_S)


async def members(
    base: Host, cli: SlurmCli, job: sj.SlurmJob, nodes: JobNodes, log_dir: str, server: WatchConfig,
    say: Callable[[str], None], *, wait_for_workers: bool = True,
) -> tuple[list[MemberSpec], list[SrunHost], str, str] | int:  # fmt: skip
    """The workers as members, their hosts inside the allocation, the line saying what was found, and what they
    still lack ("" when nothing: _pending)."""
    if wait_for_workers:
        found = await workers_of(base, cli, job, log_dir, say)
    else:
        listed = await list_dir(base, log_dir)
        found = srt.workers(listed[0]) if not isinstance(listed, str) else []
    if isinstance(found, int):
        return found
    if not found:
        say(f"no worker log in {log_dir} yet: nothing runs in it")
        return EXIT_NOTHING
    heads = await _heads(base, log_dir, found)
    router, router_head, names = await _router(base, log_dir)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PORTS_WITHIN_S
    while (
        wait_for_workers
        and loop.time() < deadline
        and not (_all_named(found, heads) and (router is None or srt.router_named(router_head)))
    ):
        await asyncio.sleep(LOOK_EVERY_S)  # a worker's first lines (its server_args) come once Python started
        heads = await _heads(base, log_dir, found)
        router, router_head, names = await _router(base, log_dir)
    specs = specs_of(log_dir, found, heads, server, nodes.nodes)
    if router is not None:  # the frontend: the deployment is ready once it routes to a prefill and a decode worker
        specs.append(MemberSpec(router.name, "router", router.node, srt.router_port(router_head, names),
                                f"{log_dir.rstrip('/')}/{router.log}"))  # fmt: skip
    outside = sorted({s.host for s in specs} - set(nodes.nodes))
    if outside:
        say(f"the workers' nodes {', '.join(outside)} are not slurm job {job.job_id}'s ({job.node_list})")
        return EXIT_BAD_ARGS
    gpus = sj.gpus_per_node(job.tres_per_node)
    hosts = [SrunHost(base, job.job_id, s.host, remote_python=server.remote_python, gpus=gpus) for s in specs]
    where = (f"srtctl job {job.job_id}: {srt.worker_counts(found)} "
             f"({', '.join(f'{s.name} on {s.host}' + ('' if s.follower else f':{s.port}') for s in specs)})")  # fmt: skip
    pending = await _pending(base, log_dir, found, heads)
    if not pending and router is not None and not srt.router_named(router_head):
        pending = f"the log of {router.name} names no port yet"
    return specs, hosts, where, pending


async def _pending(base: Host, log_dir: str, found: list[srt.SrtWorker], heads: dict[str, str]) -> str:
    """What the members still lack ("" when nothing): a worker log the recipe asks for and the directory does not
    hold yet, or a log that names no port yet (its port is then srtctl's allocation, a guess: a view that watches
    on must take them again once they are there)."""
    listed = await list_dir(base, log_dir)
    if not isinstance(listed, str):
        recipe = listed[1]
        want = recipe.counts() if (recipe.disaggregated or recipe.agg_workers) else None
        if want is not None and srt.worker_counts(found) != want:
            return f"worker logs {srt.worker_counts(found)} of {want} so far"
        short = srt.missing_nodes(srt.endpoints(found, {}), recipe)
        if short:
            return f"worker logs {', '.join(short)} so far"
    unnamed = sorted({w.name for w in found if not _all_named([w], heads)})
    return f"the log of {', '.join(unnamed)} names no port yet" if unnamed else ""


WORD_BYTES = 65536  # of srtctl's log and of benchmark.out, the tail read each look (their words are near the end)
WORD_EVERY_S = 2.0  # the job watch's own cadence (tui/sources/slurm_jobs.QueueWatch): one look a cycle


async def read_word(base: Host, log_dir: str, job_id: str) -> srt.BenchmarkWord | None:
    """The benchmark's word: srtctl's log `sweep_{job_id}.log` and `benchmark.out`, the last WORD_BYTES of each,
    in one command (tui/core/srtlayout.benchmark_word); None when they cannot be read now."""
    d = log_dir.rstrip("/")
    sweep, bench = q(f"{d}/sweep_{job_id}.log"), q(f"{d}/benchmark.out")
    command = (
        f"tail -c {WORD_BYTES} {sweep} 2>/dev/null; echo; echo {LISTING_MARK}; "
        f"tail -c {WORD_BYTES} {bench} 2>/dev/null; true"
    )
    try:
        result = await base.run(command, timeout=30)
    except (HostError, TimeoutError):
        return None
    sweep_text, _, bench_text = result.stdout.decode("utf-8", "replace").partition(f"\n{LISTING_MARK}\n")
    return srt.benchmark_word(sweep_text, bench_text)


async def words(
    base: Host, log_dir: str, job_id: str, *, every: float = WORD_EVERY_S
) -> AsyncIterator[srt.BenchmarkWord]:
    """The benchmark's word once a cycle, each time it changed: a stream of the TUI's deployment monitor (folded by
    its MemberFolder into the deployment, as the board's job watch folds follow_word's)."""
    last: srt.BenchmarkWord | None = None
    while True:
        word = await read_word(base, log_dir, job_id)
        if word is not None and word != last:
            last = word
            yield word
        await asyncio.sleep(every)


async def follow_word(
    base: Host, log_dir: str, job_id: str, fold: Callable[[srt.BenchmarkWord], bool], *, every: float = WORD_EVERY_S
) -> None:
    """The benchmark's word read once a cycle (after the caller's own first read) and handed to `fold` (the job
    watch's fold), until it says the job ended (True: one last read was taken after it)."""
    while True:
        await asyncio.sleep(every)
        word = await read_word(base, log_dir, job_id)
        if word is not None and fold(word):
            return
