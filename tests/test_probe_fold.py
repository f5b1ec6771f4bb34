"""One probe call folded into the last call's memo (tui.core.probe_fold): where to read from, the log's clock,
and calls a period apart giving the verdict one fold of the whole log gives. Pure: looks are values, no process
and no file beyond the fixtures read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.core.config import WatchConfig
from tui.core.events import LogActivity, LogLook, LogReset, ServerProcess
from tui.core.logparse import LogParser
from tui.core.probe_fold import WHOLE_BELOW, FileLook, ReadPlan, fold_call, history_clock, log_look, read_plan
from tui.core.probe_memo import LogMark, ProbeMemo
from tui.core.probe_rule import probe_verdict
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness

LOGS = Path(__file__).parent / "fixtures" / "logs"
PATH = "/var/log/sglang.log"
ALIVE = ServerProcess(alive=True, pids=(7,))


def first(config: WatchConfig | None = None) -> ProbeMemo:
    return ProbeMemo("k", (config or WatchConfig(port=30000, log=PATH)).first_state())


def file_look(
    size: int, mtime: float | None = None, inode: str = "11", tail: bytes | None = None, last_t: float | None = None
) -> FileLook:
    return FileLook("file", "2049", inode, size, mtime, tail=tail, last_t=last_t)


def call(
    memo: ProbeMemo, data: bytes, size: int, now: float, mtime: float | None = None, last_t: float | None = None
) -> tuple[ProbeMemo, int]:
    """One call that saw the file at `size` and read `data` from the memo's offset (as the command does)."""
    look = file_look(size, mtime, tail=memo.mark.tail if memo.mark else None, last_t=last_t)
    plan = read_plan(memo, look, PATH)
    assert plan.start is not None
    return fold_call(memo, plan, look, PATH, plan.start, data, [ALIVE], now)


def test_where_a_call_reads_from() -> None:
    memo = first()
    assert read_plan(memo, file_look(1000), PATH) == ReadPlan(0, fresh_parser=True)
    assert read_plan(memo, file_look(WHOLE_BELOW), PATH).find_launch  # a large log: its last launch first
    memo.mark = LogMark("2049", "11", 500, b"xyz")
    assert read_plan(memo, file_look(900, tail=b"xyz"), PATH) == ReadPlan(500)
    rotated = read_plan(memo, file_look(900, inode="12"), PATH)
    assert rotated.start == 0 and rotated.fresh_parser and rotated.resets[0].reason == "rotated"
    assert read_plan(memo, file_look(400, tail=b"xyz"), PATH).resets[0].detail.endswith("size 400 < offset 500")
    rewritten = read_plan(memo, file_look(900, tail=b"abc"), PATH)
    assert rewritten.resets[0] == LogReset("truncated", f"{PATH}: rewritten (the bytes before offset 500 changed)")


def test_a_missing_log_is_said_once_and_its_appearance_starts_afresh() -> None:
    memo = first()
    plan = read_plan(memo, FileLook("missing"), PATH)
    assert plan.start is None and plan.resets == (LogReset("missing", PATH),)
    memo, unread = fold_call(memo, plan, FileLook("missing"), PATH, 0, b"", [], 100.0)
    assert memo.state.log_file is not None and memo.state.log_file.status == "missing" and unread == 0
    assert read_plan(memo, FileLook("missing"), PATH).resets == ()  # already said
    assert read_plan(memo, file_look(10), PATH).resets == (LogReset("appeared", PATH),)


@pytest.mark.parametrize(
    "name", ["v0.5.23-tp8-eagle3-ready.log", "fail-oom-capture-0.5.23.log", "v0.4.6-tp1-ready.log"]
)
def test_calls_a_period_apart_reach_the_state_one_read_of_the_whole_log_reaches(name: str) -> None:
    data = (LOGS / name).read_bytes()
    whole = Readiness()
    parser = LogParser()
    for event in [LogActivity(len(data), data), *parser.feed(data)]:
        whole = reduce(whole, event, 1000.0)
    memo = ProbeMemo("k", Readiness())
    cuts = [0, 1, len(data) // 3, len(data) // 3 + 7, 2 * len(data) // 3, len(data)]  # mid-line cuts included
    for i, (a, b) in enumerate(zip(cuts, cuts[1:], strict=False)):
        memo, unread = call(memo, data[a:b], b, 1000.0 + i)
        assert unread == 0 and memo.mark is not None and memo.mark.offset == b
    s = memo.state

    def bar(state: Readiness) -> tuple[int, int] | None:  # the clocks differ (one call a second): the counts not
        return (state.shards.done, state.shards.total) if state.shards is not None else None

    assert (s.phase, bar(s), s.error, s.server.tp_size, s.server.model) == (
        whole.phase, bar(whole), whole.error, whole.server.tp_size, whole.server.model,
    )  # fmt: skip
    assert [span.phase for span in s.timeline] == [span.phase for span in whole.timeline]


def test_a_call_that_reads_part_of_the_log_says_how_much_is_left() -> None:
    data = (LOGS / "v0.5.23-tp8-eagle3-ready.log").read_bytes()
    memo, unread = call(first(), data[:1000], len(data), 100.0)
    assert unread == len(data) - 1000
    assert probe_verdict(memo.state, "alive", 100.0, unread=unread).kind == "catching_up"


def test_a_calls_bytes_are_a_look_of_history_as_the_tails() -> None:
    """One clock rule for every watcher (tui.core.clocks): what a call reads was written before its look, the
    file's last byte at its mtime, its newest stamp beside that mtime giving the zone."""
    look = FileLook("file", "2049", "11", 200, 1000.0, skew=20.0, last_t=999.0)
    assert log_look(look, 150, b"x" * 50) == LogLook(200, 1000.0, 20.0, 999.0)
    assert log_look(look, 200, b"") == LogLook(200, 1000.0, 20.0, 999.0)


def test_a_calls_bytes_are_folded_when_the_log_held_them() -> None:
    look = file_look(10, mtime=150.0)
    assert history_clock(look, 100.0, 200.0) == 150.0
    assert history_clock(look, 170.0, 200.0) == 170.0  # not before the last call: they were not there then
    assert history_clock(look, 100.0, 140.0) == 140.0  # never after now
    assert history_clock(FileLook("file", size=10, mtime=150.0, skew=20.0), 100.0, 200.0) == 170.0  # host behind
    assert history_clock(FileLook("file", size=10), 100.0, 200.0) == 200.0  # no mtime: now


def test_a_stamped_log_read_late_is_on_its_own_clock() -> None:
    """The phase began when its line was written, not when a call read it: a first call 100 s after the weights
    began reads 100 s in the phase."""
    head = b"[2026-12-01 20:18:30] server_args=ServerArgs(model_path='m', tp_size=1)\n"
    body = b"[2026-12-01 20:18:31 TP0] Load weight begin. avail mem=70.00 GB\n"
    data = head + body
    written = 1796156311.5  # the host is on UTC: the file was last written half a second after the last stamp
    memo, _ = call(first(), data, len(data), now=written + 100.0, mtime=written, last_t=1796156311.0)
    s = memo.state
    assert s.phase is Phase.LOADING_WEIGHTS
    assert s.phase_since == 1796156311.0  # the line's own time (read 100 s later)
    assert s.last_progress_at == written  # the log's last write, before the call read it


def test_a_hang_is_counted_from_the_logs_last_write_across_calls() -> None:
    """The last call that saw progress and the calls after it, each a fresh fold: the stall verdict comes at
    the first call past the budget, counted from the log's write (its mtime), not from when a call read it."""
    data = (LOGS / "v0.5.23-tp8-eagle3-ready.log").read_bytes()
    cut = data.index(b"Multi-thread loading shards:  10%")  # the bar at 3/30, a frame cut mid-line
    memo = first(WatchConfig(port=30000, log=PATH, stall_after=30.0))
    memo, _ = call(memo, data[:cut], cut, now=1009.0, mtime=1000.0)  # read 9 s after it was written
    assert memo.state.phase is Phase.LOADING_WEIGHTS
    assert memo.state.last_progress_at == 1000.0
    codes = []
    for now in (1019.0, 1029.0, 1039.0):  # a 10 s period, the log silent since 1000
        memo, _ = call(memo, b"", cut, now=now, mtime=1000.0)
        codes.append(probe_verdict(memo.state, "alive", now).code)
    assert codes == [0, 0, 3]  # 39 s > 30 s: the first call past the budget (counted from the read, it would be 30 s)
