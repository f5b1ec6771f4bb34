"""The reducer fed by the real monitor watching the simulator: a server that dies after ready is failed, and a
relaunch that truncates the log (`> LOG`) shows its own startup again instead of the old launch's ready."""

from __future__ import annotations

import time
from pathlib import Path

from tests.helpers.processes import Sims
from tests.helpers.sim import SimServer
from tui.core.events import HealthResult, LogReset
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line
from tui.sources.local import LocalHost
from tui.sources.monitor import Monitor

STARTUP = (Phase.STARTING, Phase.INIT, Phase.LOADING_WEIGHTS, Phase.KV_CACHE, Phase.CUDA_GRAPH, Phase.WARMUP)


async def test_death_after_ready_then_a_truncating_relaunch(tmp_path: Path, sim: Sims) -> None:
    server: SimServer = sim(tmp_path, speed=200.0, tp=2, shards=8)
    second: SimServer | None = None
    monitor = Monitor(LocalHost(), log_path=str(server.log), port=server.port, sim_gpus=str(server.gpu_state), gpu_interval=0.5,
                      process_interval=0.5)  # fmt: skip
    state = Readiness()
    seen: list[tuple[str, str]] = []  # (stage of the test, phase) after every batch
    stage = "first launch"
    reset_at: float | None = None
    health_200_after_reset = False
    killed_reason = ""
    deadline = time.monotonic() + 60
    try:
        async for batch in monitor.batches():
            for event in batch:
                state = reduce(state, event, time.time())
                if isinstance(event, LogReset) and event.reason == "truncated":
                    reset_at = time.time()
                if (
                    reset_at
                    and isinstance(event, HealthResult)
                    and event.endpoint == "/health"
                    and event.outcome == "ok"
                ):
                    health_200_after_reset = True
            monitor.set_phase(state.phase)
            seen.append((stage, state.phase.value))
            if stage == "first launch" and state.phase is Phase.READY:
                stage = "killed"
                server.stop()  # every process of the server gone, as an OOM-killer or a crash would leave it
            elif stage == "killed" and state.phase is Phase.FAILED:
                stage, killed_reason = "relaunched", verdict_line(state)
                server.log.write_bytes(b"")  # the relaunch's `> LOG`
                second = sim(tmp_path, speed=200.0, tp=2, shards=8, port=server.port)
            elif stage == "relaunched" and state.phase is Phase.READY and reset_at is not None:
                break
            if time.monotonic() > deadline:
                break
    finally:
        await monitor.close()
        server.stop()
        if second is not None:
            second.stop()
    killed = [phase for stage, phase in seen if stage == "killed"]
    assert killed and killed[-1] == "failed" and set(killed) <= {"ready", "failed"}, seen
    assert killed_reason.startswith("failed: server process exited"), killed_reason
    relaunched = [phase for stage, phase in seen if stage == "relaunched"]
    assert relaunched and relaunched[-1] == "ready" and health_200_after_reset, (verdict_line(state), seen[-20:])
    assert {p.value for p in STARTUP} & set(relaunched), relaunched  # its own startup, not the old ready
    assert state.error is None and state.launches == 0 and state.shards is not None and state.shards.done == 8
