"""Prints how many log lines per second the TUI takes in (split, classify, fold, append, render): `python bench/bench_ui_log.py`."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers.ui_fakes import FakeBatchSource, FakeClock, Step, log_bytes, make_app, play  # noqa: E402

LINES_PER_BATCH = 10_000
BATCHES = 10


def _batch(k: int) -> list[str]:
    base = k * LINES_PER_BATCH
    return [
        f"[2025-11-29 10:00:{i % 60:02d} TP{i % 8}] Decode batch. #running-req: 3, #token: {base + i}, gen throughput (token/s): 52.3"
        for i in range(LINES_PER_BATCH)
    ]


async def main() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock, max_log_lines=20_000)
    batches = [_batch(k) for k in range(BATCHES)]
    async with app.run_test(size=(160, 48)) as pilot:
        offset = 0
        started = time.perf_counter()
        for lines in batches:
            event = log_bytes(lines, offset)
            offset = event.offset
            await play(pilot, source, clock, [Step(clock.t, [event])])
        elapsed = time.perf_counter() - started
        view = app.log_pane.view
        keys_started = time.perf_counter()
        await pilot.press("w")
        await pilot.press("w")
        keys_s = time.perf_counter() - keys_started
    total = LINES_PER_BATCH * BATCHES
    print(
        f"{total} lines in {BATCHES} batches: {elapsed:.2f} s, {total / elapsed:,.0f} lines/s "
        f"(kept {view.line_count}, max_lines 20000); wrap on+off over the kept lines: {keys_s * 1000:.0f} ms"
    )


if __name__ == "__main__":
    asyncio.run(main())
