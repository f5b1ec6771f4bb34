"""`sglang-tui dump HOST --port N --log PATH [--json] [--out FILE]`: py-spy of every process of the server
(`dump slurm:JOBID|srt:LOGDIR --member NAME`: one member of a Slurm job, _member below).

Runs `py-spy dump` on the host for the main process, each scheduler rank and the detokenizer, groups the
ranks by the shape of their stacks and names the odd ones out. The whole dump is saved to a file (--out,
else under the state directory) whose path is printed; --json prints the `dump --json` object on stdout.
Exit codes from the one table (tui/core/exitcodes.py): 0 dumped, 1 could not dump (py-spy missing, ptrace
refused: one line says what to do) or a process exited during the dump (the line names it), 2 bad arguments,
4 cannot connect, 5 the server's processes are another user's, 6 no server process found.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from pathlib import Path

from tui.commands.options import DumpOptions
from tui.core import stacks
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_CANNOT_SEE, EXIT_CONNECT, EXIT_FAILED, EXIT_NOTHING, EXIT_OK
from tui.history.paths import state_dir
from tui.sources import pyspy
from tui.sources.connect import make_host
from tui.sources.control import watch_only
from tui.sources.host import Host, HostError
from tui.sources.procwatch import ProcessWatch

NOT_DUMPED = {"nothing": EXIT_NOTHING, "cannot_see": EXIT_CANNOT_SEE}  # DumpResult.found: why nothing was dumped


def default_path(where: str, now: float | None = None) -> Path:
    """$XDG_STATE_HOME/sglang-tui/dumps/dump-HOST-PORT-YYYYmmdd-HHMMSS.txt (default state home ~/.local/state)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", where)
    return state_dir() / "dumps" / f"dump-{safe}-{stamp}.txt"


def report_text(result: pyspy.DumpResult, where: str) -> str:
    """What the saved file holds: the verdict, then every process's frames and py-spy's own text."""
    lines = [f"# sglang-tui dump of {where}, {time.strftime('%Y-%m-%d %H:%M:%S')}"]
    if result.grouping is not None:
        lines.append(f"# {result.grouping.summary}")
    if result.error:
        lines.append(f"# {result.error}")
    for s in result.stacks:
        lines.append(f"\n## {s.name} (pid {s.pid}) {s.cmdline}".rstrip())
        if s.error:
            lines.append(f"   py-spy: {s.error}")
        for t in s.threads:
            lines.append(f"  Thread {t.tid} ({t.status}) {t.name}".rstrip())
            lines.extend(f"    {f.text()}" for f in t.frames)
    lines.append("\n## py-spy output as printed\n" + result.raw)
    return "\n".join(lines) + "\n"


def save(text: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def dump_and_save(
    host: Host, watch: ProcessWatch, *, remote_python: str, where: str, out: str | None = None
) -> tuple[pyspy.DumpResult, Path | None]:
    """Dump and save (also for `wait --dump-on-stall` and the TUI's `d`); no file when nothing was dumped."""
    result = await pyspy.dump(host, watch, remote_python=remote_python, where=where)
    if not result.stacks:
        return result, None
    return result, save(report_text(result, where), Path(out) if out else default_path(where))


async def _main(opts: DumpOptions) -> int:
    if opts.target.slurm:
        return await _member(opts)
    host = make_host(opts.target.spec())
    try:
        await host.connect()
    except HostError as exc:
        print(f"sglang-tui dump: cannot connect to {opts.target.host}: {exc}", file=sys.stderr)
        return EXIT_CONNECT
    where = f"{opts.target.host} port {opts.server.port}"
    try:
        try:
            result, path = await dump_and_save(
                host,
                watch_only(host, opts.server),
                remote_python=opts.server.remote_python,
                where=opts.target.host,
                out=opts.out,
            )
        except (HostError, TimeoutError) as exc:
            print(f"sglang-tui dump: {where}: {exc}", file=sys.stderr)
            return EXIT_FAILED
        except OSError as exc:
            print(f"sglang-tui dump: cannot save the dump: {exc}", file=sys.stderr)
            return EXIT_FAILED
    finally:
        await host.close()
    printed, lines, code = outcome(result, path, json_out=opts.json)
    if printed is not None:
        print(printed)
    for line in lines:
        print(f"sglang-tui dump: {line}", file=sys.stderr)
    return code


def outcome(result: pyspy.DumpResult, path: Path | None, *, json_out: bool) -> tuple[str | None, list[str], int]:
    """(what goes to stdout, the lines for stderr, the exit code) of a dump. Exit 1 also when a process exited
    during the dump: the server is going down, and its ranks are no longer where the dump found them."""
    if result.error or result.grouping is None:
        partial = f" (what could be dumped is in {path})" if path is not None else ""
        return None, [f"{result.error or 'nothing was dumped'}{partial}"], NOT_DUMPED.get(result.found, EXIT_FAILED)
    printed = (
        json.dumps(stacks.to_json([s for s in result.stacks if not s.error], result.grouping)) if json_out else None
    )
    lines = [result.grouping.summary] + ([f"saved to {path}"] if path is not None else [])
    return printed, lines, EXIT_FAILED if result.grouping.exited else EXIT_OK


def _say(line: str) -> None:
    print(f"sglang-tui dump: {line}", file=sys.stderr)


async def _member(opts: DumpOptions) -> int:
    """`dump slurm:JOBID --member node1` / `dump srt:LOGDIR --member decode0` (issue 36: "dump of one worker's
    ranks"): the job read as `wait` and `stop` read it (tui/commands/slurm_members.py: an srtctl job's workers, a
    job's nodes), the member's processes found among the job's own on its node (tui/sources/slurm_procs.py) and
    dumped there through the srun step the watch uses. Every line names the member; the JSON is `dump --json`'s.
    Exit 2 when --member names no member, or is missing while the job has several."""
    from tui.commands import slurm_members
    from tui.sources.slurm_procs import SlurmProcessWatch

    async def body(members: slurm_members.SlurmMembers) -> int:
        names = [s.name for s in members.specs]
        if opts.member is None and len(names) > 1:
            _say(f"slurm job {members.job_id} has {len(names)} members: name one with --member ({', '.join(names)})")
            return EXIT_BAD_ARGS
        picked = next((i for i, s in enumerate(members.specs) if s.name == (opts.member or names[0])), None)
        if picked is None:
            _say(f"slurm job {members.job_id} has no member {opts.member} (its members: {', '.join(names)})")
            return EXIT_BAD_ARGS
        spec, host = members.specs[picked], members.hosts[picked]
        where = f"{spec.name} on {spec.host} (slurm job {members.job_id})"
        try:
            await host.connect()
        except HostError as exc:
            _say(f"cannot reach {where}: {exc}")
            return EXIT_CONNECT
        watch = SlurmProcessWatch(host, job_id=members.job_id, node=spec.host, port=spec.process_port)
        try:
            result, path = await dump_and_save(host, watch, remote_python=opts.server.remote_python, where=where,
                                               out=opts.out)  # fmt: skip
        except (HostError, TimeoutError) as exc:
            _say(f"{where}: {exc}")
            return EXIT_FAILED
        except OSError as exc:
            _say(f"cannot save the dump: {exc}")
            return EXIT_FAILED
        printed, lines, code = outcome(result, path, json_out=opts.json)
        if printed is not None:
            print(printed)
        for line in lines:
            _say(f"{spec.name}: {line}")
        return code

    return await slurm_members.with_job(opts.target, opts.server, _say, body, notes=False)


def run(opts: DumpOptions) -> int:
    return asyncio.run(_main(opts))
