"""What the simulator prints is real time: `--speed` shortens the steps, but log timestamps, tqdm's
elapsed/remaining/rate and `elapsed=` fields follow the wall clock, so a watcher's rates and ETAs are true."""

from __future__ import annotations

import re
import time
from datetime import datetime
from pathlib import Path

from tests.helpers.processes import Sims
from tests.helpers.sim import wait_for_log
from tui.core.logparse import LogParser
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.core.timeline import span_duration
from tui.sim.params import SimParams
from tui.sim.script import rank_steps, scheduled_text

T0 = 1764410400.0
STAMP = re.compile(rb"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", re.M)


def _load_elapsed(speed: float) -> float:
    params = SimParams(log="-", port=1, t0=T0, shards=8, speed=speed)
    text = scheduled_text(rank_steps(params, 0), speed)
    return float(re.findall(r"Load weight end\. elapsed=([\d.]+) s", text)[0])


def test_elapsed_fields_and_bar_times_shrink_with_speed() -> None:
    slow, fast = _load_elapsed(1.0), _load_elapsed(100.0)
    assert slow > 60.0 and abs(slow / fast - 100.0) < 1.0  # 8 shards of ~8 s: real seconds at each speed
    params = SimParams(log="-", port=1, t0=T0, shards=8, speed=1.0)
    frames = re.findall(r"\| 8/8 \[(\d\d):(\d\d)<", scheduled_text(rank_steps(params, 0), 1.0))
    assert frames and int(frames[-1][0]) * 60 + int(frames[-1][1]) > 40  # tqdm's elapsed at speed 1: a minute
    params = SimParams(log="-", port=1, t0=T0, shards=8, speed=100.0)
    assert re.findall(r"\| 8/8 \[00:00<00:00", scheduled_text(rank_steps(params, 0), 100.0))


def _stamps(data: bytes) -> list[float]:
    return [datetime.strptime(m.decode(), "%Y-%m-%d %H:%M:%S").timestamp() for m in STAMP.findall(data)]


def test_a_replay_of_the_sim_log_shows_real_durations(tmp_path: Path, sim: Sims) -> None:
    started = time.time()
    server = sim(tmp_path, speed=100.0, tp=2, shards=16)
    try:
        data = wait_for_log(server, b"The server is fired up and ready to roll!", timeout=60)
        real = time.time() - started
    finally:
        server.stop()
    stamps = _stamps(data)
    # every process stamps the real time it writes: in order across ranks (two writers may cross a second)
    assert all(b >= a - 1.0 for a, b in zip(stamps, stamps[1:], strict=False))
    assert started - 1.0 <= stamps[0] and stamps[-1] <= time.time() + 1.0  # at speed 100 the old clock ran ahead
    assert abs((stamps[-1] - stamps[0]) - real) <= 2.0, (stamps[-1] - stamps[0], real)  # 1 s stamp resolution
    load = [float(x) for x in re.findall(rb"Load weight end\. elapsed=([\d.]+) s", data)]
    assert load and max(load) <= real
    state = Readiness()
    parser = LogParser()
    for event in parser.feed(data) + parser.flush():
        state = reduce(state, event, time.time())
    main = [s for s in state.timeline if s.model == "main" and s.phase is not Phase.READY]
    total = sum(span_duration(s) or 0.0 for s in main)
    assert abs(total - real) <= 2.0, ([(s.phase.value, s.duration_s) for s in main], real)


def test_live_shard_rate_matches_the_real_rate(tmp_path: Path, sim: Sims) -> None:
    server = sim(tmp_path, speed=32.0, tp=2, shards=16)  # 16 shards of ~8 simulated s: ~4 real seconds
    parser, state = LogParser(), Readiness()
    seen: list[tuple[float, int]] = []  # (real time, shards done) as the live log showed them
    offset = 0
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (state.shards and state.shards.done >= 16):
            data = server.log.read_bytes()[offset:] if server.log.exists() else b""
            offset += len(data)
            now = time.time()
            for event in parser.feed(data):
                state = reduce(state, event, now)
            if state.shards is not None and (not seen or seen[-1][1] != state.shards.done):
                seen.append((now, state.shards.done))
            time.sleep(0.05)
    finally:
        server.stop()
    assert state.shards is not None and state.shards.done == 16, seen
    first = next((t, d) for t, d in seen if d >= 1)
    real_rate = (16 - first[1]) / (seen[-1][0] - first[0])
    rate = state.shards.rate_per_s
    assert rate is not None and real_rate / 2 <= rate <= real_rate * 2, (rate, real_rate, seen)
