"""`sglang-tui probe TARGET (--ready | --alive)`: one look, one verdict, one exit code; for kubelet exec probes,
systemd, Slurm scripts and CI, run where the server runs (`probe local --port N --log PATH`) or over SSH.

Each call is a fresh process: it takes the memo the last call left (tui.core.probe_memo, in the state dir),
reads only the log bytes written since, looks once at the server's processes, asks /health once (marked as
ours; at the first 200 of a run, the identity probe too), folds it all with the same reducer as `wait`, saves
the memo atomically and exits with tui.core.probe_rule's code. `--timeout S` (default 2) is what /health's own
answer may take, counted from its request, never from the process start: a start slowed by a busy node (every
CPU compiling kernels) costs the call time, never /health its budget. The look before it (the connection, the
log) has READ_SHARE of S from when it begins: a first call on a large log reads what that allows and the next
calls read on. So a call takes at most its start + CALL_BOUND(S); kubelet's timeoutSeconds must cover both.
It imports no Textual and no httpx, and `probe local` no asyncio: its look runs on tui.sources.now.NowHost, the
same look code with no event loop (an SSH target's runs on one); it records nothing in the history (it reads its
past, for the budgets).

Exit codes (the one table): 0 ready (--ready) / progressing or ready (--alive), 1 failed or stopped,
2 bad arguments, 3 stalled, 4 cannot connect, 7 not ready yet (--ready).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from tui.commands import probe_file
from tui.commands.probe_options import ProbeOptions
from tui.commands.targets import ServerTarget
from tui.core.config import WatchConfig
from tui.core.events import ConnectionState, Event, LogReset
from tui.core.fold import Fold, StateStep
from tui.core.probe_fold import FileLook, ReadPlan, fold_call, read_plan
from tui.core.probe_memo import ProbeMemo, decode, encode
from tui.core.probe_rule import (  # every code it exits with (README's table is checked against them)
    EXIT_BAD_ARGS,
    EXIT_CONNECT,
    EXIT_FAILED,  # noqa: F401
    EXIT_NOT_YET,  # noqa: F401
    EXIT_OK,  # noqa: F401
    EXIT_STALLED,  # noqa: F401
    Mode,
    ProbeVerdict,
    probe_verdict,
    quiet_and_budget,
)
from tui.core.state import Phase, Readiness
from tui.sources.host import Host, HostError

READ_RATE = 64 << 20  # bytes a second a call may plan to read and parse (the parser does ~150 MiB/s)
MIN_READ = 8 << 20  # a call starved of its budget (a loaded host) still moves on by this much
HEALTH_GAP_S = 1.0  # a /health younger than this (the other probe of the pair just asked) is not asked again
MARGIN_S = 0.15  # kept for the fold, the memo and the exit after the last answer
HISTORY_BUSY_S = 0.2  # a history another process holds longer than this is read by a later call
READ_SHARE = 0.5  # of --timeout, for the connection and the log read before /health is asked
BUSY_START_S = 1.4  # a call's start to its look with every CPU busy (issue 32: 1353 ms max on a 16-CPU H100 host)


def call_bound_s(timeout: float) -> float:
    """The most a call takes after its start: the look (READ_SHARE of --timeout), /health (--timeout from its
    request) and the fold, the memo and the exit (MARGIN_S). kubelet's timeoutSeconds adds the start to it
    (BUSY_START_S on a busy node): 5 for the default --timeout."""
    return timeout * (1 + READ_SHARE) + MARGIN_S


def run(opts: ProbeOptions) -> int:
    mode: Mode = "ready" if opts.ready else "alive"
    if opts.server.host == "local":  # one look here, blocking: no event loop, no asyncio import (issue 32)
        from tui.sources.now import NowHost, run_now

        return run_now(probe(opts, mode, NowHost()))
    import asyncio

    return asyncio.run(probe(opts, mode))


def _bad(line: str) -> int:
    print(f"sglang-tui probe: {line}", file=sys.stderr)
    return EXIT_BAD_ARGS


def config_of(opts: ProbeOptions) -> WatchConfig:
    target = opts.server
    return WatchConfig(
        port=target.port, log=target.log, read_only=True, health=opts.health, stall_after=opts.stall_after
    )


async def probe(opts: ProbeOptions, mode: Mode, host: Host | None = None) -> int:
    """One call: the memo, one look (on `host`, else the target's), the fold, the memo kept, the verdict."""
    # the look's own deadline, from when it begins (the process start, slow on a busy node, is not /health's)
    deadline = time.monotonic() + opts.timeout * READ_SHARE
    config = config_of(opts)
    target = opts.server
    key = probe_file.memo_key(target.host, target.port, target.log)
    path = probe_file.memo_path(key)
    unsafe = probe_file.not_private(path.parent)
    if unsafe is not None:
        return _bad(f"{unsafe}: set SGLANG_TUI_PROBE_DIR to a directory of your own")
    with probe_file.MemoLock(path, wait_s=opts.timeout * 0.6) as lock:
        memo = load(path, key, config)
        if lock.problem is None and not lock.held:  # another call folds now: answer from its memo, look at nothing
            return say(opts.json, mode, memo, probe_verdict(memo.state, mode, time.time()), time.time(), 0)
        memo, unread = await look_and_fold(opts, config, memo, deadline, host)
        now = time.time()
        try:
            if lock.problem is not None:
                raise OSError(lock.problem)
            probe_file.write(path, encode(memo, code_stamp()))
        except OSError as err:  # a read-only state dir: the next call starts over, this one still answers
            print(f"sglang-tui probe: cannot keep the probe's memo ({err}); set SGLANG_TUI_PROBE_DIR", file=sys.stderr)
    return say(opts.json, mode, memo, probe_verdict(memo.state, mode, now, unread=unread), now, unread)


def code_stamp() -> str:
    """Which code wrote a memo: the name, size and mtime of every module of tui/core (the state's records, the
    parser, the reducer), so an upgrade or an edit rebuilds it; cheaper than the package's version (metadata)."""
    import hashlib

    import tui.core

    digest = hashlib.sha256()
    for entry in sorted(os.scandir(os.path.dirname(tui.core.__file__)), key=lambda e: e.name):
        if entry.name.endswith(".py"):
            info = entry.stat()
            digest.update(f"{entry.name}:{info.st_size}:{info.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


def load(path: Path, key: str, config: WatchConfig) -> ProbeMemo:
    """The last call's memo when it holds up, else a first state (as `wait` starts from)."""
    data = probe_file.read(path)
    found = decode(data, code_stamp(), key) if data is not None else None
    if isinstance(found, ProbeMemo):
        state = found.state
        if state.stall_after != config.stall_after or state.health_probed != config.health:
            state = config.first_state(state)  # options changed between calls: the new ones hold
        found.state = state
        return found
    return ProbeMemo(key=key, state=config.first_state())


async def look_and_fold(
    opts: ProbeOptions, config: WatchConfig, memo: ProbeMemo, deadline: float, host: Host | None = None
) -> tuple[ProbeMemo, int]:
    from tui.sources import probe_look

    target: ServerTarget = opts.server
    if host is None:
        from tui.core.config import HostSpec
        from tui.sources.connect import make_host

        host = make_host(HostSpec(target.host, opts.ssh))
    answers: list[Event] = []
    look: FileLook | None = None
    found = memo.found
    plan, start, data = ReadPlan(None), 0, b""
    try:
        try:
            await probe_look.connect(host, max(0.05, deadline - time.monotonic()))
        except (HostError, TimeoutError) as exc:
            detail = str(exc) or f"no connection to {target.host} within --timeout"
            return fold_call(memo, plan, None, None, 0, b"", [ConnectionState("failed", detail)], time.time())
        answers.append(ConnectionState("connected", host.name))
        if target.log:
            look, plan, start, data = await _read(host, target.log, memo, deadline)
        try:
            settled = memo.state.phase in (Phase.READY, Phase.SERVING)  # the look a ready server needs
            process, owner, found = await probe_look.processes(
                host, target.port, target.log, memo.found, settled=settled
            )
            answers.extend((process, owner) if owner is not None else (process,))
        except (HostError, TimeoutError) as exc:
            print(f"sglang-tui probe: the process look failed: {exc}", file=sys.stderr)
        if config.health and wants_health(memo.state, opts.ready, time.time()):
            answers.extend(  # its whole --timeout, from its request: whatever the start and the look took
                await probe_look.health(host, target.port, timeout=opts.timeout, identify=wants_identity(memo.state))
            )
    finally:
        await host.close()
    fold = Fold(steps=past_steps(opts.history, target.host))
    memo, unread = fold_call(memo, plan, look, target.log, start, data, answers, time.time(), fold=fold)
    return replace(memo, found=found), unread


async def _read(host: Host, log: str, memo: ProbeMemo, deadline: float) -> tuple[FileLook, ReadPlan, int, bytes]:
    """The log's look, where to read from, and the bytes this call's budget allows."""
    from tui.sources import probe_look

    mark = memo.mark
    look = await probe_look.look_at_log(
        host, log, at=mark.offset if mark else 0, tail_bytes=len(mark.tail) if mark else 0
    )
    plan = read_plan(memo, look, log)
    if plan.start is None:
        return look, plan, 0, b""
    start = plan.start
    if plan.find_launch:
        start, detail = await probe_look.last_launch_offset(host, log, look.size)
        if start > 0:
            plan = ReadPlan(start, (*plan.resets, LogReset("started_at_last_launch", detail)), fresh_parser=True)
    limit = max(MIN_READ, int(max(0.0, deadline - time.monotonic()) * READ_RATE))
    data = await probe_look.read_log(host, log, start, limit) if look.size > start else b""
    return look, plan, start, data


def wants_health(state: Readiness, ready_mode: bool, now: float) -> bool:
    """Whether this call asks /health: not when the last answer is younger than HEALTH_GAP_S (the pair's other
    probe just asked), and for --alive not once ready (a stall no longer applies; the log and the process
    watch say a failure)."""
    asked = dict(state.health_checked_at).get("/health")
    if asked is not None and 0 <= now - asked < HEALTH_GAP_S:
        return False
    return ready_mode or state.phase not in (Phase.READY, Phase.SERVING)


def wants_identity(state: Readiness) -> bool:
    """The identity probe goes with the first /health 200 of a run (as the poller's): not once this run has one."""
    if not state.health_ready or state.health_ok_since is None:
        return True
    checked = dict(state.health_checked_at)
    asked = max((checked[e] for e in ("/model_info", "/get_model_info") if e in checked), default=None)
    return asked is None or asked < state.health_ok_since


def past_steps(path: Path | None, host: str) -> tuple[StateStep, ...]:
    """The history's past of this launch's key, read once per memo (never recorded: a probe is no watcher), as
    the recorder loads it (its version presumed from the host's newest launch while none is known); a history
    that is busy or broken is passed over (the budgets are then the phases' own)."""
    if path is None or not path.exists():
        return ()

    def step(state: Readiness, now: float) -> Readiness:
        if not state.server.model or state.past is not None:  # once per memo: the budgets it gives hold
            return state
        from tui.core.launchkey import key_fields, launch_key, start_mark
        from tui.history.store import HistoryError, HistoryStore

        try:
            with HistoryStore(path, busy_timeout_s=HISTORY_BUSY_S) as store:
                server = state.server
                if server.version is None:
                    server = replace(server, version=store.known_version(key_fields(server, host)))
                key = launch_key(server, host)
                return state if key is None else state.evolve(past=store.past(key, exclude_mark=start_mark(state)))
        except (HistoryError, OSError, ValueError) as err:  # ValueError: an odd row (tui.core.past.OddRow)
            print(f"sglang-tui probe: {err}; no history for this call", file=sys.stderr)
            return state

    return (step,)


def say(as_json: bool, mode: Mode, memo: ProbeMemo, found: ProbeVerdict, now: float, unread: int) -> int:
    """The verdict line (or the `wait --json` object, with a "probe" key), and the exit code."""
    if as_json:
        from tui.core.report import to_json  # only for --json: the ETA and cross-check modules it loads

        quiet, budget = quiet_and_budget(memo.state, now)
        report = to_json(memo.state, now)
        report["probe"] = {
            "mode": mode,
            "exit": found.code,
            "verdict": found.kind,
            "line": found.line,
            "quiet_s": round(quiet, 1) if quiet is not None else None,
            "budget_s": round(budget, 1) if budget is not None else None,
            "unread_bytes": unread,
        }
        print(json.dumps(report, ensure_ascii=False))
    else:
        print(found.line)
    if found.code == EXIT_CONNECT:
        print(f"sglang-tui probe: {found.line}", file=sys.stderr)
    return found.code
