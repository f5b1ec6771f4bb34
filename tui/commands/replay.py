"""`sglang-tui replay LOGFILE [LOGFILE …] [--json]`: stream a saved log through the parser and the reducer, print
the result. Several logs are the nodes of one multi-node server, node 0 first: each replays as its own member
(on its own log's clock) and the deployment model (tui/core/deployment.py) folds them into one verdict."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from tui.commands.options import ReplayOptions
from tui.core.clockmap import LOG_IS_CLOCK
from tui.core.events import Event
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_OK
from tui.core.logparse import LogParser
from tui.core.readiness import reduce
from tui.core.remedy_clues import ClueReader
from tui.core.report import format_report, to_json
from tui.core.state import Readiness

CHUNK = 1 << 20
SNIFF = 64 << 10
HOLD_UNTIMED = 10_000  # events held back until the first log time is known (so early events get a real time)


class ReplayError(Exception):
    """Bad input: str() is the one line to print."""


def run(opts: ReplayOptions) -> int:
    paths = list(opts.logfiles)
    if len(paths) > 1:
        return _run_members(paths, opts.json)
    path = paths[0]
    try:
        state = replay_file(path)
    except ReplayError as err:
        print(f"sglang-tui replay: {err}", file=sys.stderr)
        return EXIT_BAD_ARGS
    if opts.record:
        problem = record(state, opts.record, opts.history, path)
        if problem:
            print(f"sglang-tui replay: {problem}", file=sys.stderr)
            return EXIT_BAD_ARGS
    try:
        if opts.json:
            print(json.dumps(to_json(state), ensure_ascii=False))
        else:
            print(format_report(state))
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # reader went away (| head): not an error
    return EXIT_OK


def record(state: Readiness, host: str, path: Path | None, logfile: str) -> str | None:
    """`--record HOST`: add the log's (last) launch to the history at `path` (None: --no-history); the problem as
    one line, or None."""
    from tui.history.record import to_record
    from tui.history.store import HistoryError, HistoryStore

    if path is None:
        return "--record and --no-history contradict each other; drop one"
    rec = to_record(state, host, "replay")
    if rec is None:
        return f"{logfile}: no server_args line, so no launch key to record it under"
    try:
        with HistoryStore(path) as store:
            launch_id = store.record_launch(rec)
    except HistoryError as err:
        return str(err)
    print(f"sglang-tui replay: recorded launch {launch_id} ({rec.outcome}) in {path}", file=sys.stderr)
    return None


def _run_members(paths: list[str], as_json: bool) -> int:
    """Several logs: one member each (node0, node1, … in the order given), one deployment verdict."""
    from tui.core import deployment
    from tui.core.report import deployment_json, members_json

    dep = deployment.nodes([(f"node{i}", path) for i, path in enumerate(paths)])
    for member, path in zip(dep.members, paths, strict=True):
        try:
            dep = dep.with_state(member.name, replay_file(path))
        except ReplayError as err:
            print(f"sglang-tui replay: {err}", file=sys.stderr)
            return EXIT_BAD_ARGS
    try:
        if as_json:
            print(json.dumps(deployment_json(dep), ensure_ascii=False))
        else:
            print(format_report(deployment.combined(dep)))
            print("members:")
            for item in members_json(dep):
                print(f"  {item['name']:<8} {item['phase']:<16} {item['host']}  {item['reason']}")
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


def replay_file(path: str) -> Readiness:
    """The final state of a log file, read in chunks; ReplayError for input that is not a readable log."""
    if not os.path.exists(path):
        raise ReplayError(f"{path}: no such file; pass the path of a saved SGLang log")
    if os.path.isdir(path):
        raise ReplayError(f"{path} is a directory; pass the log file inside it")
    try:
        handle = open(path, "rb")  # noqa: SIM115  (closed by the `with` below; opened apart to word the error)
    except OSError as err:
        raise ReplayError(f"{path}: cannot read it ({err.strerror or err}); check the path and permissions") from None
    with handle:
        return replay_stream(handle, path)


def replay_stream(handle: BinaryIO, name: str = "input") -> Readiness:
    state = Readiness.of(clock=LOG_IS_CLOCK)  # replay's clock is the log's own (tui.core.clocks)
    parser = LogParser()
    held: list[Event] = []
    now: float | None = None
    for events in _event_batches(handle, parser, name):
        for event in events:
            t = getattr(event, "t", None)
            if now is None:
                if t is None and len(held) < HOLD_UNTIMED:
                    held.append(event)
                    continue
                now = t if t is not None else 0.0
                for early in held:
                    state = reduce(state, early, now)
                held.clear()
            if t is not None:
                now = t
            state = reduce(state, event, now)
    for early in held:
        state = reduce(state, early, now if now is not None else 0.0)
    if now is None:  # no line had a time: the replay has no clock, so no span has a known duration
        state = state.evolve(timeline=tuple(replace(span, duration_s=None) for span in state.timeline))
    return state


def _event_batches(handle: BinaryIO, parser: LogParser, name: str) -> Iterator[list[Event]]:
    first = True
    clues = ClueReader()
    try:
        while True:
            chunk = handle.read(CHUNK)
            if not chunk:
                break
            if first:
                _check_text(chunk[:SNIFF], name)
                first = False
            events = parser.feed(chunk)
            said = clues.feed(chunk)  # what a remedy reads, after the events of the same bytes (as wait has it)
            yield events if said is None else [*events, said]
    except OSError as err:
        raise ReplayError(f"{name}: read failed ({err.strerror or err})") from None
    if first:
        raise ReplayError(f"{name} is empty (0 bytes): nothing to replay")
    events = parser.flush()
    said = clues.flush()
    yield events if said is None else [*events, said]


def _check_text(sample: bytes, name: str) -> None:
    """Reject binary input (a core dump, a gzip'd log) before parsing it as lines.

    NUL runs are not binary data: a log cleared with `: > LOG` under a writer without O_APPEND starts with
    them, and the parser skips them (as `wait` does); what lies around them must still be text."""
    if sample[:2] == b"\x1f\x8b":
        raise ReplayError(f"{name} is binary data, not a text log; decompress it first")
    text = sample.replace(b"\x00", b"").decode("utf-8", errors="replace")
    if not text:
        return
    controls = sum(1 for c in text if ord(c) < 32 and c not in "\t\n\r\x1b\x08\x0c")
    bad = text.count("\ufffd")
    if (controls + bad) > 0.05 * len(text):
        raise ReplayError(f"{name} is binary data, not a text log")
