"""`sglang-tui wait HOST`: fold the monitor's events into the readiness model until ready, failed or stalled.

Exit codes from the one table (tui/core/exitcodes.py): 0 ready, 1 failed (a stop, ours or from outside,
included), 2 bad arguments, 3 stalled, 4 cannot connect/auth, 6 nothing found (a missing log, or no log and nothing
listening, for --missing-log-grace; no such Slurm job), 7 timed out.
Ready needs this server's /health 200 (tui.core.answerer); with --no-health, the log's fired-up line and a live
process instead. Progress goes to stderr when it
changes; with --json every state change is one JSON line on stdout (the `replay --json` keys), the last
line being the final state.

`--launch CMD` starts the server first when no process of it is found (as the TUI does: ServerControl.launch,
its own session, a PID file and a run marker); `--stop-on-fail` then stops what it launched on any verdict but
ready and says whether the GPU memory came back. `--on-ready CMD` / `--on-fail CMD` run locally at the end
with the verdict in the environment (SGLANG_TUI_VERDICT, SGLANG_TUI_EXIT, SGLANG_TUI_REASON, SGLANG_TUI_HOST).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from tui.commands.options import WaitOptions
from tui.core import fmt, wording
from tui.core.capture import current_capture
from tui.core.config import Hooks, WatchConfig
from tui.core.eta import estimate, eta_words, pace
from tui.core.events import ControlResult
from tui.core.exitcodes import (
    EXIT_CONNECT,
    EXIT_FAILED,
    EXIT_NOTHING,
    EXIT_OK,
    EXIT_STALLED,
    EXIT_TIMEOUT,
)
from tui.core.explain import nothing_found, symlink_line
from tui.core.firstlook import first_look_done
from tui.core.readiness import reduce
from tui.core.remedy import remedy_line
from tui.core.report import to_json
from tui.core.state import Phase, Readiness
from tui.core.verdict import decide
from tui.core.wording import hook_words, verdict_line
from tui.history.recorder import FINISH_WAIT_S, Recorder
from tui.sources.bounded import within
from tui.sources.connect import make_host
from tui.sources.host import Host, HostError
from tui.sources.session import Session, weights_step
from tui.sources.waiting import Watched
from tui.sources.waiting import wait_for as wait_until
from tui.sources.weightfiles import WeightFilesProbe

if TYPE_CHECKING:
    from tui.sources.control import ServerControl

FIRST_LOOK_S = 10.0  # the first progress line waits this long at most for the log's and the port's first look (4.8 s seen on a loaded 2-CPU box)
HEARTBEAT_S = 15.0  # repeat an unchanged progress line this often, so a long quiet phase still shows life
COUNT_EVERY_S = 1.0  # a moving bar alone (same phase) prints at most this often
HISTORY_GRACE_S = 0.5  # the history's last write gets this long even when --timeout is spent


@dataclass(frozen=True)
class Outcome:
    """What `wait` ends with: the exit code (tui/core/exitcodes.py) and its last line, in the verdict's words."""

    code: int
    line: str


def progress_line(state: Readiness, elapsed: float) -> str:
    parts = [state.phase.value]
    if state.shards is not None and state.phase is Phase.LOADING_WEIGHTS:
        bar = state.shards
        left, silent = pace(state, bar, state.updated_at)  # the one ETA rule; withdrawn when progress stops
        said = (
            f"{fmt.rate(bar.rate_per_s)}, {fmt.eta(left)}"
            if silent is None
            else f"no progress for {fmt.duration(silent)}"
        )
        parts.append(f"shards {bar.done}/{bar.total}, {said}")
    which, capture = current_capture(state)  # the count the header and the shards pane show
    if capture is not None and state.phase is Phase.CUDA_GRAPH:
        parts.append(f"{which} {capture.done}/{capture.total}")
    if state.connection != "connected":
        parts.append(f"link {state.connection}")
    parts.append(verdict_line(state))
    ahead = eta_words(estimate(state, state.updated_at))  # with history: "ready in ~4m10s · last 3 launches …"
    if ahead:
        parts.append(ahead)
    return f"[{fmt.duration(elapsed):>6}] " + " · ".join(parts)


def grace_words(state: Readiness, grace: float | None) -> str:
    """While nothing is found: "exit 6 after 30s if nothing turns up (--missing-log-grace)"; else ""."""
    if grace is None or not nothing_found(state):
        return ""
    return f"exit {EXIT_NOTHING} after {fmt.duration(grace)} if nothing turns up (--missing-log-grace)"


class Reporter:
    """Writes progress to stderr when it changes and JSON lines to stdout when the state's report changes."""

    def __init__(
        self, json_out: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr, *, grace: float | None = None
    ) -> None:
        self.json_out = json_out
        self.out = out
        self.err = err
        self.grace = grace  # --missing-log-grace, said in the line while nothing is found
        self._last_key: object = None
        self._last_counts: object = None
        self._last_line = ""
        self._last_at = 0.0
        self._last_json: str | None = None

    def update(self, state: Readiness, elapsed: float) -> None:
        missing = nothing_found(state)
        key = (
            state.phase, state.error, state.stall is not None, state.connection, state.health_ready,
            state.log_ready, missing,
        )  # fmt: skip
        capture = current_capture(state)
        counts = (state.shards.done if state.shards else None, capture[0], capture[1].done if capture[1] else None)
        line = progress_line(state, elapsed)
        grace = grace_words(state, self.grace)
        if grace:
            line += f" · {grace}"
        # the first line and the first JSON object wait for the first look, so that they say what that look found
        if self._last_key is None and not first_look_done(state) and elapsed < FIRST_LOOK_S:
            return
        since = elapsed - self._last_at
        if (
            key != self._last_key
            or (counts != self._last_counts and since >= COUNT_EVERY_S)
            or (since >= HEARTBEAT_S and line != self._last_line)
        ):
            self._write(self.err, line)
            self._last_key, self._last_counts, self._last_line, self._last_at = key, counts, line, elapsed
        if self.json_out:
            self.emit_json(state, force=False)

    def emit_json(self, state: Readiness, *, force: bool) -> None:
        text = json.dumps(to_json(state), ensure_ascii=False)
        if text != self._last_json or (force and self._last_json is None):
            self._write(self.out, text)
            self._last_json = text

    def say(self, line: str) -> None:
        self._write(self.err, line)

    @staticmethod
    def _write(stream: TextIO, line: str) -> None:
        try:
            stream.write(line + "\n")
            stream.flush()
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


async def wait_for(
    watched: Watched,
    reporter: Reporter,
    *,
    timeout: float | None,
    budget: float | None = None,
    grace: float | None = None,
) -> tuple[Outcome, Readiness]:
    """The one wait loop (tui/sources/waiting.py) with `wait`'s reporter: the exit code and its line (`budget`:
    the --timeout given, said when it runs out; `timeout`: what is left of it; `grace`: nothing of the server
    found for that long ends it, nothing found)."""
    found, state = await wait_until(
        watched,
        reporter.update,
        timeout=timeout,
        say=lambda said: reporter.say(f"sglang-tui wait: {said}"),
        budget=budget,
        grace=grace,
    )
    code = found.code if found.code is not None else EXIT_TIMEOUT
    return Outcome(code, wording.line(found, state, state.updated_at)), state


async def _main(opts: WaitOptions, reporter: Reporter) -> int:
    grace = opts.missing_log_grace
    where = opts.target.host
    host = make_host(opts.target.spec())
    started = time.monotonic()
    try:
        try:
            await within(host.connect(), opts.timeout)
        except HostError as exc:
            reporter.say(f"sglang-tui wait: cannot connect to {where}: {exc}")
            return EXIT_CONNECT
        except asyncio.TimeoutError:
            reporter.say(f"sglang-tui wait: timed out connecting to {where}")
            return EXIT_TIMEOUT
        config = opts.server
        if opts.target.discover:  # neither --port nor --log: find the server on the host
            from tui.commands.find_server import find

            found_on = await find(host, config, where, say=lambda line: reporter.say(f"sglang-tui wait: {line}"))
            if isinstance(found_on, int):
                return found_on
            config = found_on  # the port and log it found
        control = None
        launched: ControlResult | None = None
        if config.launch:
            from tui.sources.control import controller

            control = controller(host, config)
            launched, line = await launch_if_absent(control)
            reporter.say(f"sglang-tui wait: {line}")
            if launched is not None and not launched.ok:
                found = Outcome(EXIT_FAILED, f"failed: launch: {launched.detail or 'the server did not start'}")
                reporter.say(f"sglang-tui wait: {found.line}")
                run_hook(opts.hooks, found, where, config.port)
                return found.code
        remaining = None if opts.timeout is None else max(0.0, opts.timeout - (time.monotonic() - started))
        recorder = Recorder(opts.history, where, "wait", port=config.port, log=config.log or "")
        initial = config.first_state()
        if launched is not None:  # our own launch, folded first
            initial = reduce(initial, launched, time.time())
        steps = (weights_step(WeightFilesProbe(host)), recorder.step)
        session = Session.open(host, config, process_watch=control, initial=initial, steps=steps)
        found, state = await wait_for(session, reporter, timeout=remaining, budget=opts.timeout, grace=grace)
        if opts.json:
            reporter.emit_json(state, force=True)
        link = symlink_line(state.log_file) if state.log_file is not None else ""
        remedy = remedy_line(state)
        if remedy:  # what to change, said before the verdict (which stays the line that says how it ended)
            reporter.say(f"sglang-tui wait: remedy: {remedy}")
        reporter.say(
            f"sglang-tui wait: {found.line}" + (f"; {link}" if link else "")
        )  # the file read may not be the server's
        # the verdict is said first; the history's writes get what is left of --timeout (a timeout leaves the
        # launch 'unfinished'), so a locked history file never holds up the exit
        recorder.finish(state, history_time_left(opts.timeout, started))
        if found.code == EXIT_STALLED and opts.dump_on_stall:
            await _dump_on_stall(host, config, where, reporter)
        if found.code != EXIT_OK and opts.stop_on_fail and control is not None and launched is not None:
            stopped = await control.terminate()
            reporter.say(f"sglang-tui wait: --stop-on-fail: {stop_words(stopped)}")
            if not stopped.ok or stopped.survivors or stopped.gpu_held:
                found = Outcome(found.code, found.line + "; and the stop did not finish: " + stop_words(stopped))
        run_hook(opts.hooks, found, where, config.port, remedy=remedy)
        return found.code
    finally:
        await host.close()


def history_time_left(timeout: float | None, started: float) -> float:
    """What is left of --timeout for the history's last writes (at least HISTORY_GRACE_S: a healthy file's
    write takes milliseconds, and the launch would be lost without it)."""
    if timeout is None:
        return FINISH_WAIT_S
    return max(HISTORY_GRACE_S, timeout - (time.monotonic() - started))


async def _dump_on_stall(host: Host, config: WatchConfig, where: str, reporter: Reporter) -> None:
    """`--dump-on-stall`: py-spy every process of the stalled server (issue 13); the exit code stays 3."""
    from tui.commands.dump import dump_and_save
    from tui.sources.control import watch_only

    try:
        result, path = await dump_and_save(
            host, watch_only(host, config), remote_python=config.remote_python, where=where
        )
    except (HostError, TimeoutError, OSError) as exc:
        reporter.say(f"sglang-tui wait: no dump: {exc}")
        return
    if result.grouping is not None and any(not s.error for s in result.stacks):
        reporter.say(f"sglang-tui wait: dump: {result.grouping.summary}")
    if result.error:
        reporter.say(f"sglang-tui wait: dump: {result.error}")
    if path is not None:
        reporter.say(f"sglang-tui wait: dump saved to {path}")


async def launch_if_absent(control: ServerControl) -> tuple[ControlResult | None, str]:
    """Launch the server unless a process of it runs already (then it is only waited for)."""
    try:
        found = await control.process_state_now()
    except Exception as err:  # an unknown state is no licence to launch a second server
        return ControlResult(
            "launch", False, f"process state unknown ({type(err).__name__}: {err}): not launching"
        ), "not launching"
    if found.alive:
        return None, f"a server process runs already ({len(found.pids)} pid(s)): waiting for it, not launching"
    result = await control.launch()
    return result, (f"launched: {result.detail}" if result.ok else f"launch failed: {result.detail}")


def stop_words(result: ControlResult) -> str:
    """What a stop did, in the TUI's words (survivors, GPU memory still held or released)."""
    from tui.ui.labels import control_summary  # words only: no Textual is imported

    return control_summary(result)


def hook_env(found: Outcome, host: str, port: int, remedy: str = "") -> dict[str, str]:
    """The environment --on-ready / --on-fail run with: the verdict, the exit code, the reason, the host, and on a
    failure with a known remedy, that remedy in one line (SGLANG_TUI_REMEDY: tui.core.remedy.Remedy.line)."""
    env = dict(
        os.environ,
        SGLANG_TUI_VERDICT=hook_words(found.code),
        SGLANG_TUI_EXIT=str(found.code),
        SGLANG_TUI_REASON=found.line,
        SGLANG_TUI_HOST=host,
        SGLANG_TUI_PORT=str(port),
    )
    env.pop("SGLANG_TUI_REMEDY", None)  # never one inherited from a caller's environment
    if remedy:
        env["SGLANG_TUI_REMEDY"] = remedy
    return env


def run_hook(
    hooks: Hooks,
    found: Outcome,
    host: str,
    port: int,
    *,
    say: Callable[[str], None] | None = None,
    quiet: bool = False,
    remedy: str = "",
) -> None:
    """Run --on-ready (exit 0) or --on-fail (any other verdict) locally through the shell, with the verdict and
    where (`host`, `port`) in its environment; its failure is said (to stderr, or to `say`). quiet: its stdin,
    stdout and stderr on /dev/null (the TUI owns the terminal)."""
    command = hooks.on_ready if found.code == EXIT_OK else hooks.on_fail
    if not command:
        return
    tell = say or (lambda line: print(f"sglang-tui wait: {line}", file=sys.stderr))
    quietly = subprocess.DEVNULL if quiet else None
    try:
        done = subprocess.run(command, shell=True, env=hook_env(found, host, port, remedy), check=False,
                              stdin=quietly, stdout=quietly, stderr=quietly)  # fmt: skip
    except OSError as err:
        tell(f"could not run {command!r}: {err}")
        return
    if done.returncode:
        tell(f"{command!r} exited {done.returncode}")


def tui_hook(hooks: Hooks, host: str, port: int) -> Callable[[Readiness], str | None] | None:
    """--on-ready / --on-fail for the TUI: runs the one its state's verdict calls for (blocking: the app runs it
    in a thread worker) and returns what went wrong, or None. None when neither option is given."""
    if not hooks:
        return None

    def hook(state: Readiness) -> str | None:
        found = decide(state)
        if found.code is None:
            return None
        said: list[str] = []
        run_hook(hooks, Outcome(found.code, verdict_line(state)), host, port, say=said.append, quiet=True,
                 remedy=remedy_line(state))  # fmt: skip
        return "; ".join(said) or None

    return hook


def run(opts: WaitOptions) -> int:
    if opts.target.several:
        from tui.commands import wait_deployment  # several nodes, or PD members: the deployment model

        return wait_deployment.run(opts, Reporter(opts.json))
    if opts.target.slurm:
        from tui.commands import wait_slurm  # a Slurm job: its nodes as a deployment, inside its allocation

        return wait_slurm.run(opts, Reporter(opts.json))
    return asyncio.run(_main(opts, Reporter(opts.json, grace=opts.missing_log_grace)))
