"""The identity probe: when /health turns 200, one `/model_info` (or 0.4.x's `/get_model_info`) asks what answers,
and its result comes before that 200. Against real HTTP servers (tests.test_health.ScriptedServer, the simulator)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.helpers.deadline import deadline
from tests.helpers.processes import Sims
from tests.test_health import ScriptedServer, server  # noqa: F401  (the fixture)
from tui.core.events import HealthResult, ServerInfoAnswer
from tui.sources.health import HealthPoller
from tui.sources.local import LocalHost

SGLANG_INFO = b'{"model_path": "org/m", "tokenizer_path": "org/m", "is_generation": true}'


async def _collect(poller: HealthPoller, until, limit: float = 10.0) -> list[HealthResult | ServerInfoAnswer]:
    results: list[HealthResult | ServerInfoAnswer] = []
    async with deadline(limit):
        async for result in poller.results():
            results.append(result)
            if until(results):
                break
    return results


def _health_oks(results: list[HealthResult | ServerInfoAnswer]) -> int:
    return sum(1 for r in results if r.endpoint == "/health" and r.outcome == "ok")


async def test_identity_comes_once_before_the_first_200(server: ScriptedServer) -> None:  # noqa: F811
    server.status.update({"/health": 200, "/model_info": 200})
    server.body["/model_info"] = SGLANG_INFO
    poller = HealthPoller(LocalHost(), server.port, fast_interval=0.01, ready_interval=0.01, models_interval=5.0)
    results = await _collect(poller, lambda rs: _health_oks(rs) >= 4)
    order = [r.endpoint for r in results if r.endpoint != "/v1/models"]
    assert order[:2] == ["/model_info", "/health"] and order.count("/model_info") == 1, order
    ident = results[[r.endpoint for r in results].index("/model_info")]
    assert (ident.outcome, ident.model_path) == ("ok", "org/m")
    assert all(b"user-agent: sglang-tui-probe" in head.lower() for head in server.heads)  # the tool's own probes


async def test_a_garbage_answer_is_not_sglangs_and_a_new_run_of_200s_asks_again(server: ScriptedServer) -> None:  # noqa: F811
    server.status.update({"/health": 200, "/model_info": 200})
    server.body["/model_info"] = b"<html>hello</html>"
    poller = HealthPoller(
        LocalHost(), server.port, slow_interval=0.01, fast_interval=0.01, ready_interval=0.01, models_interval=5.0
    )
    results = await _collect(poller, lambda rs: _health_oks(rs) >= 2)
    ident = [r for r in results if r.endpoint == "/model_info"]
    assert len(ident) == 1 and ident[0].outcome == "garbage" and ident[0].model_path is None
    server.status["/health"] = 503  # it stops answering 200, then comes back: a new run, asked again
    await _collect(poller, lambda rs: any(r.endpoint == "/health" and r.outcome == "starting" for r in rs))
    server.status["/health"] = 200
    again = await _collect(poller, lambda rs: _health_oks(rs) >= 1)
    first_ok = next(i for i, r in enumerate(again) if r.endpoint == "/health" and r.outcome == "ok")
    assert [r.endpoint for r in again[:first_ok]].count("/model_info") == 1, again


async def test_a_404_falls_back_to_get_model_info(server: ScriptedServer) -> None:  # noqa: F811
    server.status.update({"/health": 200, "/get_model_info": 200})  # SGLang 0.4.x: no /model_info
    server.body["/get_model_info"] = SGLANG_INFO
    poller = HealthPoller(LocalHost(), server.port, fast_interval=0.01, ready_interval=0.01, models_interval=5.0)
    results = await _collect(poller, lambda rs: _health_oks(rs) >= 1)
    ident = [r for r in results if r.endpoint in ("/model_info", "/get_model_info")]
    assert [(r.endpoint, r.outcome, r.model_path) for r in ident] == [("/get_model_info", "ok", "org/m")]
    paths = [p for _, p in server.requests]
    assert paths.index("/model_info") < paths.index("/get_model_info")


async def test_disabled_probes_nothing(server: ScriptedServer) -> None:  # noqa: F811
    server.status["/health"] = 200
    poller = HealthPoller(LocalHost(), server.port, fast_interval=0.01, enabled=False)
    task = asyncio.ensure_future(_collect(poller, lambda rs: True, limit=30.0))
    await asyncio.sleep(0.5)
    assert not task.done() and server.requests == []
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_the_simulator_names_its_model(tmp_path: Path, sim: Sims) -> None:
    simulator = sim(tmp_path, speed=400.0, tp=2, shards=8)
    poller = HealthPoller(LocalHost(), simulator.port, slow_interval=0.5, fast_interval=0.1)
    try:
        results = await _collect(poller, lambda rs: _health_oks(rs) >= 1, limit=60.0)
    finally:
        simulator.stop()
    ident = [r for r in results if r.endpoint == "/model_info"]
    assert len(ident) == 1 and ident[0].outcome == "ok" and ident[0].model_path
