"""A large log on attach (issue 21): its last launch's first bytes and the file's last ones, the middle skipped,
with the byte offsets kept right for what follows (growth, a reconnect, a truncation). Real files, LogTail locally
and through a real sshd, with a small AttachWindow so the files stay small."""

from __future__ import annotations

import asyncio
import calendar
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.helpers.processes import Spawner
from tests.helpers.sshd import Sshd
from tests.test_logtail import Collector, start_writer, tail_ssh_host
from tui.core.events import LogActivity, LogLook, LogReset
from tui.sources.host import Host
from tui.sources.local import LocalHost
from tui.sources.logtail import AttachWindow, LogTail

WINDOW = AttachWindow(read_whole_below=1000, tail=4000, head=2000, scan_whole_max=50_000, scan_head=8000)
OLD = b"[2025-11-29 08:00:00] server_args=ServerArgs(model_path='old', tp_size=8)\n"
LAUNCH = b"[2025-11-29 10:00:02] server_args=ServerArgs(model_path='m', tp_size=8)\n"


@pytest.fixture(params=["local", "ssh"])
async def host(request: pytest.FixtureRequest, spawn: Spawner) -> AsyncIterator[Host]:
    """LocalHost (its commands start in this process: `spawn` says so) or a host through the test sshd."""
    h: Host = LocalHost() if request.param == "local" else tail_ssh_host(request.getfixturevalue("sshd"))
    await h.connect()
    yield h
    await h.close()


def startup(n: int = 60) -> bytes:
    return b"".join(
        b"[2025-11-29 10:00:%02d TP%d] startup line %04d of the launch\n" % (i % 60, i % 8, i) for i in range(n)
    )


def serving(n: int, tag: bytes = b"s") -> bytes:
    return b"".join(
        b"[2025-11-29 11:%02d:00 TP0] Decode batch. #running-req: 1, %s %06d\n" % (i % 60, tag, i) for i in range(n)
    )


def parts(c: Collector) -> tuple[bytes, bytes]:
    """The bytes delivered before the skip and after it."""
    before, after, skipped = b"", b"", False
    for e in c.events:
        if isinstance(e, LogReset) and e.reason == "skipped":
            skipped = True
        elif isinstance(e, LogActivity):
            if skipped:
                after += e.data
            else:
                before += e.data
    return before, after


def line_start_after(data: bytes, offset: int) -> int:
    """The first line start at or after `offset`."""
    return offset if offset == 0 or data[offset - 1 : offset] == b"\n" else data.index(b"\n", offset) + 1


async def read(host: Host, log: Path) -> Collector:
    c = Collector(LogTail(host, str(log), window=WINDOW))
    await c.until(lambda: c.tail.offset == log.stat().st_size)
    return c


async def test_a_launch_far_from_the_end_is_read_as_its_head_and_the_files_tail(host: Host, tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_bytes(OLD + serving(100, b"old") + LAUNCH + startup() + serving(500))
    data = log.read_bytes()
    assert len(data) < WINDOW.scan_whole_max  # found by a grep of the whole file
    launch = data.index(LAUNCH)
    c = await read(host, log)
    with open(log, "ab") as f:  # the server keeps writing after the attach
        f.write(serving(3, b"new"))
    await c.until(lambda: c.tail.offset == log.stat().st_size)
    await c.stop()
    assert c.resets() == ["started_at_last_launch", "skipped"]
    head, tail = parts(c)
    assert head.startswith(LAUNCH) and head.endswith(b"\n") and len(head) <= WINDOW.head
    assert head == data[launch : launch + len(head)]  # whole lines of the launch's first bytes
    start = line_start_after(data, len(data) - WINDOW.tail)
    assert tail == log.read_bytes()[start:]  # the last bytes from a line's start, then what came after
    skip = next(e for e in c.events if isinstance(e, LogReset) and e.reason == "skipped")
    assert skip.skipped == len(data) - WINDOW.tail - (launch + len(head))
    look = c.looks[0]  # the look: the size (history up to it), the mtime, and the newest stamp at the file's end
    assert look.end == len(data) and not look.live and look.skew_s is not None and abs(look.skew_s) < 1.0
    assert look.mtime_s is not None and abs(look.mtime_s - log.stat().st_mtime) < 5
    assert look.last_t == calendar.timegm((2025, 11, 29, 11, 499 % 60, 0, 0, 0, 0))  # serving(500)'s last line


@pytest.mark.parametrize("where", ["tail", "head", "none"])
async def test_above_the_whole_scan_only_the_head_and_tail_are_searched(host: Host, tmp_path: Path, where: str) -> None:
    log = tmp_path / "huge.log"
    body = {"tail": OLD + serving(1200, b"old") + LAUNCH + startup(20) + serving(5),
            "head": LAUNCH + startup() + serving(1200),
            "none": serving(1300)}[where]  # fmt: skip
    log.write_bytes(body)
    data = log.read_bytes()
    assert len(data) > WINDOW.scan_whole_max
    c = await read(host, log)
    await c.stop()
    head, tail = parts(c)
    if where == "tail":  # the launch is near the end: read from it, nothing skipped
        assert c.resets() == ["started_at_last_launch"] and head == data[data.index(LAUNCH) :]
    elif where == "head":
        assert c.resets() == ["skipped"] and head.startswith(LAUNCH)
        assert tail == data[line_start_after(data, len(data) - WINDOW.tail) :]
    else:  # no launch in either: the last bytes alone, from a line's start
        assert c.resets() == ["started_at_last_launch"]
        assert head == data[line_start_after(data, len(data) - WINDOW.tail) :]


async def test_a_reconnect_after_the_skip_loses_and_repeats_nothing(fresh_sshd: Sshd, tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_bytes(LAUNCH + startup() + serving(500))
    size = log.stat().st_size
    host = tail_ssh_host(fresh_sshd)
    await host.connect()
    c = Collector(LogTail(host, str(log), retry=(0.2, 1.0), window=WINDOW))
    await c.until(lambda: c.tail.offset == size)
    fresh_sshd.kill()
    writer = start_writer(log, 30, 0.01)  # the server writes on while the link is down
    await asyncio.to_thread(writer.wait)
    fresh_sshd.start()
    await c.until(lambda: c.tail.offset == log.stat().st_size, timeout=30)
    await c.stop()
    await host.close()
    assert c.resets() == ["skipped"]
    _, tail = parts(c)
    data = log.read_bytes()
    assert tail == data[line_start_after(data, size - WINDOW.tail) :]
    # the second look found the bytes written meanwhile: history from the old offset up to its size
    assert len(c.looks) >= 2 and c.looks[-1].end == len(data) and c.looks[0].end == size


async def test_a_truncation_after_the_skip_reads_the_new_file_whole(host: Host, tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_bytes(LAUNCH + startup() + serving(500))
    c = await read(host, log)
    with open(log, "r+b") as f:  # `: > log` and a new launch
        f.truncate(0)
    await asyncio.sleep(0.3)
    with open(log, "ab") as f:
        f.write(LAUNCH + b"a new start\n")
    await c.until(lambda: "truncated" in c.resets() and c.data_since_last_reset() == log.read_bytes())
    await c.stop()
    assert c.resets() == ["skipped", "truncated"]


# ------------------------------------------------------------------------------------ what the skip means (pure)


def test_a_skip_keeps_a_launch_that_was_still_running_in_its_head() -> None:
    from tests.test_readiness_phases import feed
    from tests.test_readiness_phases import startup as startup_events
    from tui.core.events import BatchStats
    from tui.core.state import Phase

    s = feed(startup_events("fired_up"))
    s = feed(
        [LogReset("skipped", "skipped 2 GB", 2 << 30), BatchStats("decode", gen_throughput=50.0, running_req=1)], s
    )
    assert s.phase is Phase.READY or s.phase is Phase.SERVING
    assert s.server.model == "m" and s.log_skipped == 2 << 30


def test_a_skip_after_a_head_that_failed_is_a_later_launchs_window() -> None:
    """The head's launch failed: the log's last bytes, past the skipped middle, belong to a later launch (a
    relaunch appended to the log), whose failure it is not."""
    from tests.test_readiness_phases import at, feed
    from tests.test_readiness_phases import startup as startup_events
    from tui.core.events import BatchStats, Failure
    from tui.core.state import Phase

    head = startup_events("load_begin") + [Failure("oom", "torch.OutOfMemoryError: CUDA out of memory.", **at(9))]
    s = feed(head)
    assert s.phase is Phase.FAILED
    s = feed([LogReset("skipped", "skipped 2 GB", 2 << 30)], s)
    assert s.phase is not Phase.FAILED and s.error is None
    s = feed([BatchStats("decode", gen_throughput=50.0, running_req=1, **at(3600))], s)
    assert s.phase is not Phase.FAILED


def test_the_monitor_marks_a_looks_bytes_as_history_until_they_are_read() -> None:
    """HistoryRead: the look first, the events as they come, the same look live once its size is read."""
    from tui.core.events import Milestone
    from tui.sources.monitor import HistoryRead

    out: list[object] = []
    h = HistoryRead(out.append)
    look = LogLook(end=300, mtime_s=1000.0, skew_s=0.5, last_t=9.0)
    h.begin(look)
    assert out == [look]
    out.append(Milestone("init_begin", t=7.0))
    h.read_to(100)
    assert out[-1] == Milestone("init_begin", t=7.0)  # not all read yet
    h.read_to(300)
    assert out[-1] == LogLook(end=300, mtime_s=1000.0, skew_s=0.5, last_t=9.0, live=True)
    h.read_to(400)
    assert len(out) == 3  # live: nothing more to say
    h.begin(LogLook(end=400, mtime_s=1001.0, live=True))  # a look with nothing to read: said as it is
    assert out[-1] == LogLook(end=400, mtime_s=1001.0, live=True)
    h.begin(LogLook(end=500, mtime_s=1002.0))
    h.end()  # a truncation: what was left of its history is over
    assert out[-2:] == [LogLook(end=500, mtime_s=1002.0), LogLook(end=500, mtime_s=1002.0, live=True)]
