"""`sglang-tui export --listen ADDR TARGET … [--textfile DIR]`: the readiness model as Prometheus metrics.

Each TARGET (tui.commands.targets: HOST, HOST:PORT, HOST:PORT:LOG) is watched as `wait` watches one server (a
Session over its own Monitor: the log, /health, the GPUs, the processes), and every state is rendered by
tui.core.metrics under its `server` label; `--deployment FILE` exports a deployment, each member under
`member` and the whole (its one verdict) without. A Slurm job (`slurm:JOBID`, `srt:LOGDIR`, …) is the fleet
board's row of it, read from the board's own watch (tui/commands/export_jobs.py): the whole and its members. Targets on the same host share one connection. `/metrics` is
served by asyncio's own server (no dependency), rendered at each scrape (the figures at that moment);
`--textfile DIR` writes the same text to DIR/sglang-tui.prom every TEXTFILE_EVERY_S for node_exporter's textfile
collector (a temporary file, then a rename: the collector never reads half a file). Launches are recorded in the
history as `wait` records them, so "× usual" grows with use. Runs until SIGINT or SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

from tui.commands.export_http import WRITE_TIMEOUT_S, HeadRefused, read_head, refuse
from tui.commands.export_probes import ROUTES
from tui.commands.export_probes import answer as probe_answer
from tui.commands.options import ExportOptions
from tui.commands.probe_file import write as write_atomically
from tui.commands.targets import ServerTarget
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_OK
from tui.core.metrics import CONTENT_TYPE, Exported, exposition
from tui.core.state import Readiness
from tui.history.recorder import Recorder
from tui.sources.bounded import within
from tui.sources.host import Host, HostError
from tui.sources.hostpool import HostPool
from tui.sources.session import Session, weights_step
from tui.sources.weightfiles import WeightFilesProbe

TEXTFILE_EVERY_S = 2.0
TEXTFILE_NAME = "sglang-tui.prom"


def run(opts: ExportOptions) -> int:
    if opts.textfile and not Path(opts.textfile).is_dir():
        return _bad(f"--textfile {opts.textfile}: not a directory (node_exporter's --collector.textfile.directory)")
    return asyncio.run(_main(opts))


def _bad(line: str) -> int:
    print(f"sglang-tui export: {line}", file=sys.stderr)
    return EXIT_BAD_ARGS


class Board:
    """The latest state of each exported server (and deployment member), rendered on demand."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str | None], Readiness] = {}

    def put(self, server: str, state: Readiness, member: str | None = None) -> None:
        self.entries[(server, member)] = state

    def drop_members(self, server: str) -> None:
        for key in [k for k in self.entries if k[0] == server and k[1] is not None]:
            del self.entries[key]

    def text(self, now: float | None = None) -> str:
        entries = [Exported(server, state, member) for (server, member), state in self.entries.items()]
        return exposition(entries, time.time() if now is None else now)


async def _main(opts: ExportOptions) -> int:
    listen = opts.listen
    board = Board()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    server = None
    if listen is not None:
        try:
            server = await asyncio.start_server(lambda r, w: serve(r, w, board), listen[0], listen[1])
        except OSError as err:
            return _bad(f"--listen {opts.listen_text}: cannot listen there ({err.strerror or err})")
        bound = server.sockets[0].getsockname()
        print(
            f"sglang-tui export: serving http://{_url_host(bound[0])}:{bound[1]}/metrics", file=sys.stderr, flush=True
        )
    try:
        writer = asyncio.ensure_future(textfile_loop(Path(opts.textfile), board, stop)) if opts.textfile else None
        try:
            if opts.target.deployment:
                return await watch_deployment(opts, board, stop)
            return await watch_all(opts, board, stop)
        finally:
            if writer is not None:
                writer.cancel()
                await asyncio.gather(writer, return_exceptions=True)
    finally:
        if server is not None:
            server.close()
            await server.wait_closed()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


async def watch_all(opts: ExportOptions, board: Board, stop: asyncio.Event) -> int:
    """The plain targets (watch_targets) beside the Slurm jobs (tui/commands/export_jobs.py, the board's rows)."""
    if not opts.jobs:
        return await watch_targets(opts, board, stop)
    from tui.commands.export_jobs import watch_jobs

    if not opts.servers:
        return await watch_jobs(opts, board, stop)
    codes = await asyncio.gather(watch_jobs(opts, board, stop), watch_targets(opts, board, stop))
    return max(codes)


async def watch_targets(opts: ExportOptions, board: Board, stop: asyncio.Event) -> int:
    """One Session per target, one Host per distinct host (connected once before the sessions start) from one
    HostPool, as `fleet` has them: every command there through one agent on one connection (sshd's MaxSessions
    counts channels: two dozen servers' tails and process watches alone would pass OpenSSH's 10), and one GPU probe
    per host."""
    pool = HostPool(remote_python=opts.watch.remote_python)
    hosts: dict[str, Host] = {}
    for target in opts.servers:
        if target.host not in hosts:
            hosts[target.host] = pool.host(opts.target.spec(target.host))
    for name, host in hosts.items():
        try:
            await host.connect()
        except HostError as err:  # its Monitors keep trying; the metrics say it is not connected
            print(f"sglang-tui export: cannot connect to {name} yet: {err}", file=sys.stderr)
    sessions: list[tuple[ServerTarget, Session, Recorder]] = []
    for target in opts.servers:
        host = hosts[target.host]
        config = replace(opts.watch, port=target.port, log=target.log)
        recorder = Recorder(opts.history, target.host, "export", port=target.port, log=target.log or "")
        session = Session.open(
            host, config, initial=config.first_state(), steps=(weights_step(WeightFilesProbe(host)), recorder.step),
            gpu_feed=pool.gpus(host, config.sim_gpus), rest_when_up=True,
        )  # fmt: skip
        board.put(target.name, session.state)
        sessions.append((target, session, recorder))

    async def follow(target: ServerTarget, session: Session) -> None:
        async for state, _ in session.states():
            board.put(target.name, state)

    tasks = [asyncio.ensure_future(follow(t, s)) for t, s, _ in sessions]
    try:
        await stop.wait()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for _, session, recorder in sessions:
            await session.close()
            recorder.finish(session.state)
        await pool.close()
    return EXIT_OK


async def watch_deployment(opts: ExportOptions, board: Board, stop: asyncio.Event) -> int:
    """The deployment's members (as `wait --deployment` folds them): each under `member`, the whole without."""
    from tui.commands.members import with_members
    from tui.core import deployment as dm
    from tui.sources.deployment import MemberSpec
    from tui.sources.deployment_session import MemberFolder, deployment_monitor, deployment_of

    name = Path(opts.target.deployment or "").stem

    async def body(specs: list[MemberSpec], hosts: list[Host]) -> int:
        monitor = deployment_monitor(specs, hosts, opts.watch.remote_python)
        dep = deployment_of(specs, opts.watch.stall_after)
        folder = MemberFolder(dep, monitor.set_phase)

        def show(dep: dm.Deployment) -> None:
            for member in dep.members:
                board.put(name, member.state, member.name)
            board.put(name, dm.combined(dep))

        show(dep)

        async def follow() -> None:
            nonlocal dep
            async for member, batch in monitor.batches():
                dep = folder(dep, member, batch, time.time())
                show(dep)

        task = asyncio.ensure_future(follow())
        try:
            await stop.wait()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await monitor.close()
        return EXIT_OK

    return await with_members(
        opts.target, opts.watch, lambda line: print(f"sglang-tui export: {line}", file=sys.stderr), body
    )


async def textfile_loop(directory: Path, board: Board, stop: asyncio.Event) -> None:
    """DIR/sglang-tui.prom, rewritten atomically every TEXTFILE_EVERY_S (and once more at the end)."""
    path = directory / TEXTFILE_NAME
    while True:
        try:
            write_atomically(path, board.text().encode("utf-8"), mode=0o644)  # node_exporter runs as another user
        except OSError as err:
            print(f"sglang-tui export: cannot write {path}: {err}", file=sys.stderr)
        if stop.is_set():
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await within(stop.wait(), TEXTFILE_EVERY_S)


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, board: Board) -> None:
    """One HTTP/1.x request: GET /metrics (the exposition), /livez and /readyz (tui.commands.export_probes), GET /
    (a pointer to them), anything else 404/405."""
    try:
        request = await read_head(reader)  # within limits (tui.commands.export_http): else 400/431, one deadline
        words = request.decode("latin-1").split()
        method, (path, _, query) = (words[0], words[1].partition("?")) if len(words) >= 2 else ("", ("", "", ""))
        extra: dict[str, str] = {}
        if method not in ("GET", "HEAD"):
            status, ctype, body = "405 Method Not Allowed", "text/plain; charset=utf-8", b"GET /metrics\n"
        elif path == "/metrics":
            status, ctype, body = "200 OK", CONTENT_TYPE, board.text().encode("utf-8")
        elif path in ROUTES:  # probe --alive / --ready over HTTP: kubelet's httpGet probes
            servers = {server: state for (server, member), state in board.entries.items() if member is None}
            status, said, extra = probe_answer(path, query, servers, time.time())
            ctype, body = "text/plain; charset=utf-8", said.encode("utf-8")
        elif path == "/":
            status, ctype, body = "200 OK", "text/plain; charset=utf-8", b"sglang-tui export: see /metrics\n"
        else:
            status, ctype, body = "404 Not Found", "text/plain; charset=utf-8", b"not found; see /metrics\n"
        more = "".join(f"{name}: {value}\r\n" for name, value in extra.items())
        head = f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n{more}Connection: close\r\n\r\n"
        writer.write(head.encode("latin-1") + (body if method != "HEAD" else b""))
        await within(writer.drain(), WRITE_TIMEOUT_S)
    except HeadRefused as refused:
        await refuse(writer, reader, refused)
    except (asyncio.TimeoutError, ConnectionError, UnicodeError, ValueError):
        pass  # a client gone, or too slow: its own connection ends, no scrape waits on it
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
