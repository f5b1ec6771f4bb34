"""The one /server_info read: right after the first /health 200 whose identity answer is SGLang's, once per run of
200s, `/get_server_info` where `/server_info` is 404 (0.4.x), never when the identity is not SGLang's. Against a
real HTTP server (tests.test_health.ScriptedServer)."""

from __future__ import annotations

from tests.helpers.deadline import deadline
from tests.test_health import ScriptedServer, server  # noqa: F401  (the fixture)
from tui.core.events import HealthResult, ServerInfoAnswer
from tui.sources.health import HealthPoller
from tui.sources.local import LocalHost

SGLANG_INFO = b'{"model_path": "org/m", "tokenizer_path": "org/m", "is_generation": true}'
OLD_SERVER_INFO = b'{"model_path": "org/m", "tp_size": 1, "version": "0.4.6", "max_total_num_tokens": 1000}'

Result = HealthResult | ServerInfoAnswer


async def _collect(poller: HealthPoller, until, limit: float = 10.0) -> list[Result]:
    results: list[Result] = []
    async with deadline(limit):
        async for result in poller.results():
            results.append(result)
            if until(results):
                break
    return results


def _oks(results: list[Result]) -> int:
    return sum(1 for r in results if isinstance(r, HealthResult) and r.endpoint == "/health" and r.outcome == "ok")


async def test_read_once_after_the_first_200_with_the_0_4_fallback(server: ScriptedServer) -> None:  # noqa: F811
    server.status.update({"/health": 200, "/model_info": 200, "/server_info": 404, "/get_server_info": 200})
    server.body["/model_info"] = SGLANG_INFO
    server.body["/get_server_info"] = OLD_SERVER_INFO
    poller = HealthPoller(
        LocalHost(), server.port, slow_interval=0.01, fast_interval=0.01, ready_interval=0.01, models_interval=5.0
    )
    results = await _collect(poller, lambda rs: _oks(rs) >= 5)
    order = [r.endpoint for r in results if r.endpoint != "/v1/models"]
    assert order[:3] == ["/model_info", "/health", "/get_server_info"], order
    answers = [r for r in results if isinstance(r, ServerInfoAnswer)]
    assert len(answers) == 1 and (answers[0].outcome, answers[0].version, answers[0].model_path) == (
        "ok",
        "0.4.6",
        "org/m",
    )
    assert answers[0].startup_time == ()  # 0.4.x has none
    paths = [p for _, p in server.requests]
    assert paths.count("/server_info") == 1 and paths.count("/get_server_info") == 1  # never a poll
    assert all(t.endswith("?from=sglang-tui") for t in server.targets if "server_info" in t)
    server.status["/health"] = 503  # a new run of 200s (a restart): read once again
    await _collect(
        poller, lambda rs: any(r.endpoint == "/health" and getattr(r, "outcome", "") == "starting" for r in rs)
    )
    server.status["/health"] = 200
    await _collect(poller, lambda rs: _oks(rs) >= 3)
    await poller.aclose()
    assert [p for _, p in server.requests].count("/get_server_info") == 2


async def test_not_read_when_the_identity_answer_is_not_sglangs(server: ScriptedServer) -> None:  # noqa: F811
    server.status.update({"/health": 200, "/model_info": 200, "/server_info": 200})
    server.body["/model_info"] = b"<html>hello</html>"
    server.body["/server_info"] = OLD_SERVER_INFO
    poller = HealthPoller(LocalHost(), server.port, fast_interval=0.01, ready_interval=0.01, models_interval=5.0)
    results = await _collect(poller, lambda rs: _oks(rs) >= 3)
    await poller.aclose()
    assert not [r for r in results if isinstance(r, ServerInfoAnswer)]
    assert "/server_info" not in [p for _, p in server.requests]


async def test_an_answer_that_is_not_json_is_garbage(server: ScriptedServer) -> None:  # noqa: F811
    server.status.update({"/health": 200, "/model_info": 200, "/server_info": 200})
    server.body["/model_info"] = SGLANG_INFO
    server.body["/server_info"] = b"[1, 2]"
    poller = HealthPoller(LocalHost(), server.port, fast_interval=0.01, ready_interval=0.01, models_interval=5.0)
    results = await _collect(poller, lambda rs: any(isinstance(r, ServerInfoAnswer) for r in rs))
    await poller.aclose()
    answer = next(r for r in results if isinstance(r, ServerInfoAnswer))
    assert answer.outcome == "garbage" and answer.version is None
