"""The simulator stopped with SIGSTOP and continued: its schedule stands still meanwhile, as a real rank's work
does, instead of catching up in a burst (tests pause it while they change its log under a wait)."""

from __future__ import annotations

import re
import time

from tests.helpers.processes import Sims
from tests.helpers.sim import wait_for_log
from tests.helpers.verdicts import paused
from tui.sim.params import SimParams
from tui.sim.script import INIT_AT, Schedule

SPEED, SLOW = 100.0, 5.0
PAUSE_S = 2.0


def test_a_paused_simulator_resumes_where_its_schedule_stood(sim: Sims) -> None:
    server = sim(speed=SPEED, tp=2, shards=8, speculative="none", extra=("--slow", f"weights={SLOW:g}"))  # no draft
    planned = SimParams(log="x", port=1, tp=2, shards=8, speculative=None, slow=f"weights={SLOW:g}")
    load_s = (Schedule.build(planned).shard_done[-1] - (INIT_AT + 4.0)) / SPEED  # the shards' real seconds
    deadline = time.monotonic() + 60  # both ranks began their load (each then measures it from its own line)
    while wait_for_log(server, b"Load weight begin").count(b"Load weight begin") < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    with paused(server):
        time.sleep(PAUSE_S)
    deadline = time.monotonic() + 60
    while len(elapsed := _load_elapsed(server.log.read_bytes())) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    # each rank's own `elapsed=` (real seconds of its load): the pause, then the whole load still to come
    assert len(elapsed) == 2 and min(elapsed) >= PAUSE_S + 0.8 * load_s, (elapsed, load_s)


def _load_elapsed(log: bytes) -> list[float]:
    return [float(x) for x in re.findall(rb"Load weight end\. elapsed=([\d.]+)", log)]
