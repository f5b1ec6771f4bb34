"""One verdict, worded once (issue 22): for every kind of verdict (tui.core.verdict.decide), the header's verdict
line, the JSON `reason` and `wait`'s last line carry the same words, from tui.core.wording alone.

The states are folded by the real reducer from the events the sources send; the header is the real HeaderPane's
drawing, the JSON the real report, and `wait`'s last line the real wait loop (tui.commands.wait.wait_for) run over
those states. Only the source of the states is a stand-in (`ReplayedStates`): the loop's own rules over a real
server are the e2e tests' (tests/test_exit_codes_e2e.py, test_wait.py, test_false_verdicts.py)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Callable
from typing import TypedDict

import pytest

from tests.test_readiness_phases import feed, startup
from tui.commands.wait import Reporter, wait_for
from tui.core import deployment as dm
from tui.core.events import (
    BatchStats,
    ConnectionState,
    ControlResult,
    Failure,
    HealthResult,
    LogFile,
    ServerProcess,
    Tick,
)
from tui.core.exitcodes import EXIT_TIMEOUT
from tui.core.readiness import reduce
from tui.core.report import to_json
from tui.core.state import Readiness
from tui.core.verdict import decide
from tui.core.wording import verdict_line
from tui.ui.panes.header import HeaderPane

OK = HealthResult("/health", "ok", status=200)
ALIVE = ServerProcess(alive=True, pids=(7,))
PROBED = Readiness.of(health_probed=True, health_port=30000, log_watched=True, process_watched=True)


class _Stamp(TypedDict):
    """A log line's time, as BatchStats keeps it."""

    at: str
    t: float


def _at(sec: int) -> _Stamp:
    return {"at": f"2025-11-29 10:{sec // 60:02d}:{sec % 60:02d}", "t": 36000.0 + sec}


def loading() -> Readiness:
    return reduce(feed(startup("weights"), PROBED), ALIVE, 36010.0)


def ready() -> Readiness:
    return reduce(reduce(feed(startup(), PROBED), ALIVE, 36020.5), OK, 36021.0)


def two_nodes(node1: Readiness) -> Readiness:
    dep = dm.nodes([("node0", "/n0.log"), ("node1", "/n1.log")])
    return dm.combined(dep.with_state("node0", loading()).with_state("node1", node1))


#: kind of verdict -> (the state, words its line must have)
CASES: dict[str, tuple[Callable[[], Readiness], str, str]] = {
    "ready": (ready, "ready", "ready: the log says fired up and /health answers 200"),
    "serving": (
        lambda: feed([BatchStats("decode", gen_throughput=598.3, accept_len=3.21, running_req=4, **_at(30))], ready()),
        "serving",
        "serving: 4 running, 598.3 tok/s, accept len 3.21",
    ),
    "starting": (loading, "starting", "loading weights"),
    "stalled": (
        lambda: reduce(loading().evolve(stall_after=30.0), Tick(), 36100.0),
        "stalled",
        "stalled in loading weights: no progress on any signal for ",
    ),
    "failed (oom)": (
        lambda: feed([Failure("oom", "torch.OutOfMemoryError: CUDA out of memory")], loading()),
        "failed",
        "failed in loading weights (out of memory): torch.OutOfMemoryError: CUDA out of memory",
    ),
    "failed (process exited)": (
        lambda: reduce(loading(), ServerProcess(alive=False), 36012.0),
        "failed",
        "failed: server process exited (no process of the server is left), with no failure line in the log",
    ),
    "stopped by sglang-tui": (
        lambda: reduce(loading(), ControlResult("terminate", True, "terminated"), 36012.0),
        "stopped",
        "stopped by sglang-tui (terminate) during loading weights",
    ),
    "stopped from outside": (
        lambda: feed([Failure("exception", "KeyboardInterrupt", rank=None)], loading()),
        "stopped",
        "stopped (by a signal from outside sglang-tui): KeyboardInterrupt",
    ),
    "cannot connect": (
        lambda: reduce(PROBED, ConnectionState("failed", "host key verification failed"), 1.0),
        "cannot_connect",
        "cannot connect: host key verification failed",
    ),
    "bad arguments (a directory as the log)": (
        lambda: reduce(PROBED, LogFile("directory", "/var/log/sglang"), 1.0),
        "bad_arguments",
        "/var/log/sglang; pass the log file inside it",
    ),
    "deployment failed": (
        lambda: two_nodes(feed([Failure("oom", "torch.OutOfMemoryError: CUDA out of memory")], loading())),
        "failed",
        "node1 failed in loading weights (out of memory): torch.OutOfMemoryError",
    ),
    "deployment starting": (lambda: two_nodes(loading()), "starting", "node0 still loading weights"),
}


class ReplayedStates:
    """A stand-in for a Session: the given state, once, then nothing more until closed (the wait loop's input)."""

    settles = False

    def __init__(self, state: Readiness) -> None:
        self.state = state

    def clock(self) -> float:
        return self.state.updated_at

    async def states(self) -> AsyncIterator[tuple[Readiness, float]]:
        yield self.state, self.state.updated_at
        await asyncio.Event().wait()  # a startup under way: nothing else comes before the timeout

    async def check_alive(self) -> Readiness:
        return self.state

    async def close(self) -> None:
        return None


def header_line(state: Readiness) -> str:
    """The header's second line (phase, times, the verdict line), as drawn at the state's own time."""
    return HeaderPane("gpu1").draw(state, state.updated_at).plain.splitlines()[1]


@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_header_the_json_reason_and_waits_last_line_say_the_same_words(case: str) -> None:
    build, kind, words = CASES[case]
    state = build()
    verdict = decide(state)
    assert verdict.kind == kind, (case, verdict)
    line = verdict_line(state)
    assert words in line, line
    reason = to_json(state)["reason"]
    assert reason == line  # the JSON reason is the verdict line, word for word
    assert header_line(state).endswith(f"   {line}"), header_line(state)  # … and the header shows exactly it
    outcome, _ = await wait_for(
        ReplayedStates(state), Reporter(True, out=io.StringIO(), err=io.StringIO()), timeout=0.2
    )
    if verdict.final:  # wait ends on it: its last line is the same line, and its code the verdict's
        assert (outcome.code, outcome.line) == (verdict.code, line)
    else:  # still starting when the time runs out: timed out, in its phase, with the same words after
        assert outcome.code == EXIT_TIMEOUT and outcome.line.startswith("timed out after 0.2s in ")
        assert outcome.line.endswith(f": {line}"), outcome.line


def test_every_kind_a_state_can_have_is_shown() -> None:
    """The cases cover every kind `decide` gives a state (the kinds a command ends with are said by `ended`)."""
    assert {kind for _, kind, _ in CASES.values()} == {
        "ready", "serving", "starting", "stalled", "failed", "stopped", "cannot_connect", "bad_arguments",
    }  # fmt: skip


def test_a_deployments_members_each_say_their_own_verdict_line() -> None:
    """A failed member's `reason` in the JSON `members` is that member's verdict line, as the header's for it."""
    failed = feed([Failure("oom", "torch.OutOfMemoryError: CUDA out of memory")], loading())
    whole = two_nodes(failed)
    members = {m["name"]: m for m in to_json(whole)["members"]}  # type: ignore[attr-defined]
    assert members["node1"]["reason"] == verdict_line(failed)
    assert to_json(whole)["reason"] == f"node1 {verdict_line(failed)}"
