"""The process watch at rest (issue 32): a fleet board or an exporter of many servers, once a server is up, needs
only to know that it lives. ProcessWatch.rest(True) drops the activity sample (only the stall rule reads it, and
it does not apply once up) and slows the loop; a death is still reported, and rest(False) brings the sample back.
A Monitor opened with rest_when_up sets it from the phase its fold feeds back; without it, never. Through
LocalHost against the real simulator."""

from __future__ import annotations

import asyncio
import time

from tests.helpers.processes import Sims
from tests.helpers.sim import wait_ready
from tests.test_control_watch import NO_RESCAN, Watch
from tui.core.config import WatchConfig
from tui.core.state import Phase
from tui.sources.local import LocalHost
from tui.sources.procwatch import ProcessWatch
from tui.sources.session import Session

WAIT_S = 60.0


async def test_at_rest_the_watch_drops_the_activity_sample_and_still_sees_a_death(sim: Sims) -> None:
    server = wait_ready(sim(speed=200.0, tp=2, shards=4))
    host = LocalHost()
    await host.connect()
    procs = ProcessWatch(host, port=server.port, log_path=str(server.log))
    watch = Watch(procs.watch_process_state(0.3, rescan_s=NO_RESCAN, first_rescan_s=NO_RESCAN))
    try:
        await watch.until(lambda s: s.alive and s.activity is not None, WAIT_S)
        procs.rest(True)
        resting_at = await watch.until(lambda s: s.alive and s.activity is None, WAIT_S, after=time.monotonic())
        second_at = await watch.until(lambda s: s.alive, WAIT_S, after=resting_at + 1e-6)  # the next check at rest
        later = [s for at, s in watch.states if resting_at <= at <= second_at]
        assert len(later) >= 2 and all(s.activity is None for s in later), later
        procs.rest(False)
        await watch.until(lambda s: s.alive and s.activity is not None, WAIT_S, after=time.monotonic())
        procs.rest(True)
        await watch.until(lambda s: s.alive and s.activity is None, WAIT_S, after=time.monotonic())
        server.stop()
        await watch.until(lambda s: not s.alive, WAIT_S)  # at rest, a death is still seen
    finally:
        await watch.close()
        await host.close()


async def test_a_session_rests_its_process_watch_once_up_only_when_asked(sim: Sims) -> None:
    server = sim(speed=200.0, tp=2, shards=4)
    host = LocalHost()
    await host.connect()
    config = WatchConfig(port=server.port, log=str(server.log), read_only=True)
    sessions = [Session.open(host, config, initial=config.first_state(), rest_when_up=r) for r in (True, False)]
    watches = [s.monitor.process_watch for s in sessions]
    assert all(isinstance(w, ProcessWatch) and not w.at_rest for w in watches)

    async def until_up(session: Session) -> None:
        async for state, _ in session.states():
            if state.phase in (Phase.READY, Phase.SERVING):
                return

    try:
        await asyncio.wait_for(asyncio.gather(*(until_up(s) for s in sessions)), WAIT_S)
        assert [w.at_rest for w in watches] == [True, False]
    finally:
        for session in sessions:
            await session.close()
        await host.close()
