"""Seeing an event (a script, not a test): from a line appended to the host's log to the readiness model having it.

Over a real sshd on loopback: the project's SshHost + LogTail + LogParser + reduce (and the whole Monitor, which
adds its 50 ms batching), against a bare `ssh testhost tail -F LOG` reading the same file (the floor).
`python bench/bench_event_latency.py [--appends 200]`
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from bench_common import default_of, loopback_sshd, md_table, section, ssh_argv, ssh_host, summary_ms

from tui.core.events import Event
from tui.core.logparse import LogParser
from tui.core.readiness import reduce
from tui.core.state import Readiness
from tui.sources.host import Host
from tui.sources.logtail import LogTail
from tui.sources.monitor import Monitor

WARMUP = 5
BATCH_S = float(default_of(Monitor.__init__, "batch_interval"))  # type: ignore[arg-type]
TIMEOUT_S = 5.0
Batches = Callable[[Host, Path], AsyncIterator[list[Event]]]  # a pipeline's events from the host, batch by batch


def decode_line(marker: int) -> bytes:
    return (f"[2025-11-29 10:00:00 TP0] Decode batch, #running-req: 1, #token: 42, token usage: 0.01, "
            f"gen throughput (token/s): {marker}.0, #queue-req: 0\n").encode()  # fmt: skip


def append(path: Path, data: bytes) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
        return time.perf_counter()
    finally:
        os.close(fd)


class Seen:
    """The markers the consumer has seen, with the time each arrived."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}
        self.changed = asyncio.Event()

    def mark(self, marker: int) -> None:
        self.at.setdefault(marker, time.perf_counter())
        self.changed.set()


async def drive(path: Path, seen: Seen, appends: int, first: int) -> tuple[list[float], int]:
    """Append one line at a time; wait for it to be seen; latencies of all but the warm-up."""
    lat, missed = [], 0
    for i in range(appends + WARMUP):
        marker = first + i
        written = append(path, decode_line(marker))
        deadline = time.perf_counter() + TIMEOUT_S
        while marker not in seen.at and time.perf_counter() < deadline:
            seen.changed.clear()
            try:
                await asyncio.wait_for(seen.changed.wait(), 0.2)
            except asyncio.TimeoutError:
                pass
        if marker not in seen.at:
            missed += 1
        elif i >= WARMUP:
            lat.append(seen.at[marker] - written)
        await asyncio.sleep(random.uniform(0.005, 0.02))
    return lat, missed


async def measured(
    consume: Callable[[Seen], Awaitable[None]], path: Path, appends: int, first: int, *, settle_s: float = 0.5
) -> tuple[list[float], int]:
    """Run `consume` (it marks each marker it sees) while `drive` appends after `settle_s`; then stop it."""
    seen = Seen()
    task = asyncio.ensure_future(consume(seen))
    try:
        await asyncio.sleep(settle_s)
        return await drive(path, seen, appends, first)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def mark_decode(seen: Seen, state: Readiness) -> None:
    """The marker of the decode line the state holds (its gen throughput), once it holds one."""
    if state.decode is not None and state.decode.gen_throughput is not None:
        seen.mark(int(state.decode.gen_throughput))


async def folded(sshd, path: Path, appends: int, first: int, batches: Batches):  # type: ignore[no-untyped-def]
    """Latencies of one sglang-tui pipeline over ssh: its batches of events, each folded by reduce."""
    host = ssh_host(sshd)
    await host.connect()

    async def consume(seen: Seen) -> None:
        state = Readiness()
        async for batch in batches(host, path):
            now = time.time()
            for event in batch:
                state = reduce(state, event, now)
            mark_decode(seen, state)

    try:
        return await measured(consume, path, appends, first)
    finally:
        await host.close()


async def parsed_tail(host: Host, path: Path) -> AsyncIterator[list[Event]]:
    """LogTail's events, each with what LogParser makes of its bytes."""
    parser = LogParser()
    async for event in LogTail(host, str(path)).events():
        yield [event, *parser.feed(getattr(event, "data", b""))]


def monitor_batches(host: Host, path: Path) -> AsyncIterator[list[Event]]:
    """The whole Monitor's batches, the log only (it closes itself when they stop)."""
    return Monitor(host, log_path=str(path), port=9, gpus=False, processes=False).batches()  # port 9: nothing listens


async def logtail_pipeline(sshd, path: Path, appends: int, first: int):  # type: ignore[no-untyped-def]
    return await folded(sshd, path, appends, first, parsed_tail)


async def monitor_pipeline(sshd, path: Path, appends: int, first: int):  # type: ignore[no-untyped-def]
    return await folded(sshd, path, appends, first, monitor_batches)


async def ssh_tail_baseline(sshd, path: Path, appends: int, first: int):  # type: ignore[no-untyped-def]
    proc = await asyncio.create_subprocess_exec(
        *ssh_argv(sshd), f"tail -n 0 -F {path}", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )

    async def consume(seen: Seen) -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            if b"gen throughput (token/s): " in line:
                seen.mark(int(line.split(b"gen throughput (token/s): ")[1].split(b".")[0]))

    try:
        return await measured(consume, path, appends, first, settle_s=1.0)  # ssh connect + tail start
    finally:
        proc.kill()
        await proc.wait()


async def main_async(appends: int) -> str:
    rows = []
    with loopback_sshd() as sshd, tempfile.TemporaryDirectory(prefix="bench-event-") as tmp:
        path = Path(tmp) / "server.log"
        path.write_bytes(b"[2025-11-29 10:00:00] server_args=ServerArgs(model_path='m', tp_size=8)\n")
        runs = [
            ("`ssh host tail -F LOG` (system OpenSSH client; the floor)", ssh_tail_baseline, 1_000_000),
            ("sglang-tui: SshHost + LogTail + LogParser + reduce", logtail_pipeline, 2_000_000),
            (
                f"sglang-tui: whole Monitor (adds its {1000 * BATCH_S:g} ms batching) + reduce",
                monitor_pipeline,
                3_000_000,
            ),
        ]
        for name, run, first in runs:
            lat, missed = await run(sshd, path, appends, first)
            p50, p99, mean, worst = summary_ms(lat)
            rows.append([name, len(lat), p50, p99, mean, worst, missed])
    table = md_table(["path", "appends", "p50", "p99", "mean", "max", "missed"], rows)
    notes = [
        "one line appended at a time to a log on the 'host' (this machine, over a real OpenSSH sshd on 127.0.0.1); "
        "the clock starts after write() returns and stops when the consumer holds the line (for sglang-tui: when "
        "the reduced Readiness shows the line's gen throughput)",
        f"{WARMUP} warm-up appends not counted; 5–20 ms pause between appends",
    ]
    return section(
        "Seeing an event: log append → readiness model",
        table,
        notes,
        f".venv/bin/python bench/bench_event_latency.py --appends {appends}",
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--appends", type=int, default=200)
    args = ap.parse_args()
    print(asyncio.run(main_async(args.appends)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
