"""`sglang-tui bench HOST --port N`: measure a ready server — TTFT, output tok/s, speculative acceptance length.

It says what it will send (stderr) before sending anything, checks `/health` first, and stops at the
request cap and the time cap. Exit codes from the one table (tui/core/exitcodes.py): 0 the bench ran and at
least one request succeeded; 1 the server is not ready, or every request failed; 2 bad arguments or a bad
prompts file (one line); 4 cannot connect; 7 the time cap stopped every request before one succeeded; 130
interrupted (Ctrl-C), with every open stream closed so no request is left running.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path

from tui.commands.options import BenchOptions
from tui.core.benchprompts import BUILTIN, PromptsError, parse_jsonl
from tui.core.benchstats import BenchResult, compare, render
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_CONNECT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TIMEOUT
from tui.core.limits import PROMPTS_MAX, size_words
from tui.sources.bench import BenchPlan, BenchRunner, NotReady
from tui.sources.bounded import within
from tui.sources.connect import make_host
from tui.sources.host import HostError

PROGRESS_EVERY_S = 5.0


def _say(line: str) -> None:
    print(f"sglang-tui bench: {line}", file=sys.stderr, flush=True)


def plan_for(opts: BenchOptions) -> BenchPlan:
    """The plan; PromptsError (one line) for a bad --prompts file."""
    prompts, source = BUILTIN, "built-in"
    if opts.prompts:
        try:
            with open(opts.prompts, "rb") as f:
                data = f.read(PROMPTS_MAX + 1)
        except OSError as err:
            raise PromptsError(f"--prompts {opts.prompts}: cannot read it ({err.strerror})") from None
        if len(data) > PROMPTS_MAX:
            raise PromptsError(
                f"--prompts {opts.prompts}: over {size_words(PROMPTS_MAX)}; a bench needs far fewer prompts"
            )
        prompts, source = parse_jsonl(data, opts.prompts), opts.prompts
    return BenchPlan(requests=opts.requests, concurrency=opts.concurrency, max_new_tokens=opts.max_tokens,
                     timeout_s=opts.timeout, prompts=prompts, prompts_from=source,
                     temperature=opts.temperature)  # fmt: skip


async def _progress(runner: BenchRunner, started: float) -> None:
    while True:
        await asyncio.sleep(PROGRESS_EVERY_S)
        p = runner.progress
        _say(f"[{time.monotonic() - started:5.0f} s] {p.done}/{runner.plan.requests} done, {p.failed} failed, "
             f"{p.in_flight} in flight")  # fmt: skip


def _stop_on_signals() -> None:
    """Ctrl-C (and SIGTERM) cancel the bench, even where a shell started it with SIGINT ignored: the
    cancellation closes every open stream before the process ends."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, task.cancel)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            pass


def against_history(history: Path | None, host: str, result: BenchResult) -> str | None:
    """Store the result with the host's newest launch in the history (issue 9's store); the change against the
    last bench of that launch's key ("accept len 1.52, last launch 3.10; …"), None with no earlier bench.
    Called once the result is printed: whatever the file does (locked, read-only, an odd row) is one line."""
    from tui.history.store import WATCH_BUSY_S, HistoryError, HistoryStore

    path = history
    if path is None or result.ok == 0:
        return None
    previous: BenchResult | None = None
    try:
        with HistoryStore(path, busy_timeout_s=WATCH_BUSY_S) as store:
            newest = store.newest(host)
            if newest is None:
                return None
            launch_id, key = newest
            try:
                found = store.last_bench(key)
                previous = BenchResult.from_json(found) if found is not None else None
            except ValueError as odd:  # an OddRow, or a stored result that is no bench's
                _say(f"history {path}: the last bench is unreadable ({odd}); compared with nothing")
            store.record_bench(launch_id, result.to_json())
    except HistoryError as err:
        _say(f"history not updated: {err}")
    return compare(previous, result) if previous is not None else None


async def bench(opts: BenchOptions, plan: BenchPlan) -> int:
    _stop_on_signals()
    where, port = opts.target.host, opts.server.port
    host = make_host(opts.target.spec())
    try:
        try:
            await within(host.connect(), 60)
        except (HostError, OSError, asyncio.TimeoutError) as exc:
            _say(f"cannot connect to {where}: {str(exc) or 'timed out'}")
            return EXIT_CONNECT
        runner = BenchRunner(host, port, plan, log_path=opts.server.log)
        try:
            await runner.check_ready()
        except NotReady as exc:
            _say(f"{exc}; wait for it first: sglang-tui wait {where} --port {port}")
            return EXIT_FAILED
        except HostError as exc:
            _say(f"cannot reach port {port} on {where}: {exc}")
            return EXIT_CONNECT
        _say("sending " + plan.describe(f"{where} port {port}"))
        started = time.monotonic()
        ticker = asyncio.ensure_future(_progress(runner, started))
        try:
            result = await runner.run()
        except HostError as exc:  # the forward could not be opened, or the link went for good
            _say(f"cannot reach port {port} on {where}: {exc}")
            return EXIT_CONNECT
        except asyncio.CancelledError:
            p = runner.progress
            _say(f"interrupted after {p.done} of {plan.requests} requests ({p.failed} failed); "
                 "every open stream was closed, so no request is left running")  # fmt: skip
            raise
        finally:
            ticker.cancel()
        if opts.json:
            print(json.dumps(result.to_json(), ensure_ascii=False), flush=True)
            for note in result.notes:  # in the text, they are its last lines
                _say(note)
        else:
            print("\n".join(render(result)), flush=True)
        change = against_history(opts.history, where, result)  # after the result: the history can only add a line
        if change:
            _say(change)
        if result.ok == 0:
            _say(f"every request failed ({result.errors[0] if result.errors else 'no reason'})")
            timed_out = result.stopped is not None and result.stopped.startswith("time cap")
            return EXIT_TIMEOUT if timed_out else EXIT_FAILED
        return EXIT_OK
    finally:
        await host.close()


def run(opts: BenchOptions) -> int:
    try:
        plan = plan_for(opts)
    except PromptsError as err:
        _say(str(err))
        return EXIT_BAD_ARGS
    problem = plan.check()
    if problem is not None:
        _say(problem)
        return EXIT_BAD_ARGS
    try:
        return asyncio.run(bench(opts, plan))
    except asyncio.CancelledError:  # Ctrl-C or SIGTERM (the handlers cancel the main task)
        return EXIT_INTERRUPTED
