"""Monitor: the sources of one host merged into batches, against the simulator and a real sshd."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from tests.helpers.deadline import deadline
from tests.helpers.processes import Sims, Spawner
from tests.helpers.sshd import Sshd, ssh_host
from tui.core.events import (
    ConnectionState,
    Event,
    GpuSnapshot,
    HealthResult,
    LogActivity,
    LogReset,
    Milestone,
    ServerArgs,
    ServerProcess,
    SourceFailed,
    Tick,
)
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line
from tui.sources.health import HealthPoller
from tui.sources.local import LocalHost
from tui.sources.monitor import Monitor, coalesce


def test_coalesce_merges_log_activity_between_resets() -> None:
    events: list[Event] = [
        LogActivity(3, b"abc"),
        Tick(),
        LogActivity(5, b"de"),
        LogReset("truncated"),
        LogActivity(2, b"xy"),
    ]
    assert coalesce(events) == [Tick(), LogActivity(5, b"abcde"), LogReset("truncated"), LogActivity(2, b"xy")]


async def collect(monitor: Monitor, until: Callable[[list[Event]], bool], timeout: float = 30.0) -> list[Event]:
    seen: list[Event] = []
    deadline = time.monotonic() + timeout
    async for batch in monitor.batches():
        seen.extend(batch)
        if until(seen) or time.monotonic() > deadline:
            break
    await monitor.close()
    return seen


async def test_local_startup_flows_into_one_readiness(tmp_path: Path, sim: Sims) -> None:
    server = sim(tmp_path, speed=200.0, tp=2, shards=8)
    host = LocalHost()
    monitor = Monitor(
        host, log_path=str(server.log), port=server.port, sim_gpus=str(server.gpu_state), gpu_interval=0.2
    )
    state = Readiness()
    batches = 0
    try:
        async for batch in monitor.batches():
            batches += 1
            for event in batch:
                state = reduce(state, event, time.time())
            monitor.set_phase(state.phase)
            if state.phase in (Phase.READY, Phase.FAILED):
                break
    finally:
        await monitor.close()
        server.stop()
    assert state.phase is Phase.READY, verdict_line(state)
    assert state.health_ready and state.log_ready
    assert state.shards is not None and state.shards.done == state.shards.total == 8
    assert state.server.tp_size == 2
    assert state.log_offset > 0 and batches > 1


async def test_every_source_reports_over_ssh(sshd: Sshd, tmp_path: Path, sim: Sims) -> None:
    server = sim(tmp_path, speed=200.0, tp=2, shards=8)
    host = ssh_host(sshd)
    monitor = Monitor(
        host, log_path=str(server.log), port=server.port, sim_gpus=str(server.gpu_state), gpu_interval=0.2,
        tick_interval=0.2, process_interval=0.3,
    )  # fmt: skip

    def have_all(seen: list[Event]) -> bool:
        kinds = {type(e) for e in seen}
        ok = any(isinstance(e, HealthResult) and e.endpoint == "/health" and e.outcome == "ok" for e in seen)
        return ok and {LogActivity, ServerArgs, Milestone, Tick, ConnectionState, GpuSnapshot, ServerProcess} <= kinds

    try:
        seen = await collect(monitor, have_all)
    finally:
        server.stop()
        await host.close()
    assert have_all(seen), sorted({type(e).__name__ for e in seen})
    assert ConnectionState("connected", "127.0.0.1") in seen
    # The log arrives whole, in order: the LogActivity bytes are the file's bytes.
    data = b"".join(e.data for e in seen if isinstance(e, LogActivity))
    assert server.log.read_bytes().startswith(data) and len(data) > 1000
    assert any(isinstance(e, ServerProcess) and e.alive for e in seen)


async def test_a_reset_log_gets_a_fresh_parser(tmp_path: Path, spawn: Spawner) -> None:
    log = tmp_path / "server.log"
    launch = b"[2025-11-29 10:00:02] server_args=ServerArgs(model_path='m', tp_size=8, port=30000)\n"
    log.write_bytes(launch)
    monitor = Monitor(LocalHost(), log_path=str(log), port=1, gpus=False, processes=False)
    seen: list[Event] = []
    truncated = rewritten = False
    async with deadline(20):
        async for batch in monitor.batches():
            seen.extend(batch)
            if not truncated and any(isinstance(e, ServerArgs) for e in seen):
                with open(log, "r+b") as f:  # the same launch written again into an emptied file …
                    f.truncate(0)
                truncated = True
            if truncated and not rewritten and any(isinstance(e, LogReset) for e in seen):
                log.write_bytes(launch)  # … once the tail has seen it emptied
                rewritten = True
            if sum(isinstance(e, ServerArgs) for e in seen) >= 2:
                break
    await monitor.close()
    kinds = [type(e).__name__ for e in seen if isinstance(e, (ServerArgs, LogReset))]
    # Without a fresh parser the second server_args would read as a relaunch of the first.
    assert kinds == ["ServerArgs", "LogReset", "ServerArgs"], kinds


async def test_a_monitor_without_ticks_queues_none() -> None:
    host = LocalHost()
    health = HealthPoller(host, 1, slow_interval=0.05)  # port 1: refused, an answer every 0.05 s
    monitor = Monitor(host, log_path=None, port=1, gpus=False, processes=False, health=health, tick_interval=0.01,
                      ticks=False)  # fmt: skip
    seen: list[Event] = []
    async with deadline(30):
        async for batch in monitor.batches():
            seen.extend(batch)
            if sum(isinstance(e, HealthResult) for e in seen) >= 10:
                break
    await monitor.close()
    assert not any(isinstance(e, Tick) for e in seen)  # at 0.01 s, ticks would have come between the answers


class BrokenControl:
    """A control whose process_state raises: a worker failure must become an event, not a crash."""

    calls = 0

    async def process_state(self) -> ServerProcess:
        BrokenControl.calls += 1
        raise RuntimeError("boom")


async def test_a_failing_worker_becomes_an_event(tmp_path: Path) -> None:
    monitor = Monitor(LocalHost(), log_path=None, port=1, gpus=False, process_watch=BrokenControl(), tick_interval=0.1)
    seen = await collect(
        monitor, lambda seen: any(isinstance(e, SourceFailed) and "boom" in e.message for e in seen), timeout=10
    )
    failure = [e for e in seen if isinstance(e, SourceFailed) and "boom" in e.message]
    assert failure and failure[0] == SourceFailed("processes", "RuntimeError: boom")  # under its own source …
    assert not any(isinstance(e, HealthResult) and "boom" in e.detail for e in seen)  # … never as a /health error
    assert BrokenControl.calls >= 1


async def _health_200(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A real HTTP server's answer to every request: 200, empty body."""
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def test_a_crashing_process_watch_shows_as_its_failure_and_health_keeps_its_fact() -> None:
    server = await asyncio.start_server(_health_200, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monitor = Monitor(
        LocalHost(), log_path=None, port=port, gpus=False, process_watch=BrokenControl(), tick_interval=0.1
    )
    state, seen = Readiness(), []
    try:
        async with deadline(30):
            async for batch in monitor.batches():
                for event in batch:
                    seen.append(event)
                    state = reduce(state, event, time.time())
                ok_at = next((i for i, e in enumerate(seen) if isinstance(e, HealthResult) and e.outcome == "ok"), None)
                failed_at = [i for i, e in enumerate(seen) if isinstance(e, SourceFailed)]
                if ok_at is not None and failed_at and failed_at[-1] > ok_at:  # a crash after health said 200
                    break
    finally:
        await monitor.close()
        server.close()
    assert [(f[0], f[1]) for f in state.source_failures] == [("processes", "RuntimeError: boom")]
    assert state.health_ready  # health keeps its last fact: 200
    assert [r.outcome for r in state.health if r.endpoint == "/health"] == ["ok"]
    assert state.process_alive is None and state.phase is not Phase.FAILED  # a crashed watch is not a dead server
    assert not any(isinstance(e, HealthResult) and e.outcome == "error" for e in seen)


async def test_refused_host_key_is_a_failed_connection_event(sshd: Sshd, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    host = ssh_host(sshd, known_hosts=str(empty))
    monitor = Monitor(host, log_path="/nonexistent.log", port=1)
    seen = await collect(
        monitor, lambda seen: any(isinstance(e, ConnectionState) and e.state == "failed" for e in seen)
    )
    failed = [e for e in seen if isinstance(e, ConnectionState) and e.state == "failed"]
    assert len(failed) == 1 and "unknown host key" in failed[0].detail
