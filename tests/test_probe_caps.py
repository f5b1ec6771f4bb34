"""The probes' bodies are capped and their whole time bounded (issue 26, item 10): `/server_info`, `/model_info`,
`/health` and the router's `/workers` from a hostile HTTP server (a real process of its own,
tests/helpers/hostile_http.py) that sends 2 GB or drips a byte every half second. What the server managed to
send shows the read stopped at the cap (tui.core.limits.PROBE_BODY_MAX)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.helpers import hostile_http
from tests.helpers.processes import Spawner
from tui.core.limits import MIB, PROBE_BODY_MAX
from tui.sources.health import HealthPoller
from tui.sources.local import LocalHost
from tui.sources.router import probe_router

SLACK = 48 * MIB  # what the kernel's socket buffers can take beyond what the client read
STOP_S = 60.0  # the stop condition: before, a 2 GB body was read whole, and a drip never ended


@pytest.fixture
def hostile(tmp_path: Path, spawn: Spawner, request: pytest.FixtureRequest) -> hostile_http.Hostile:
    return hostile_http.start(spawn, tmp_path, **request.param)


@pytest.mark.parametrize("hostile", [{"server_info": "huge"}], indirect=True)
async def test_a_2_gb_server_info_is_garbage_read_up_to_its_cap(hostile: hostile_http.Hostile) -> None:
    poller = HealthPoller(LocalHost(), hostile.port)
    try:
        answer = await asyncio.wait_for(poller.server_info(), STOP_S)
    finally:
        await poller.aclose()
    assert (answer.outcome, answer.version) == ("garbage", None)
    assert answer.detail == "/server_info answered more than 4 MiB, more than SGLang ever sends"
    assert hostile.sent("/server_info") < PROBE_BODY_MAX + SLACK  # of 2 GiB offered


@pytest.mark.parametrize("hostile", [{"model_info": "huge"}], indirect=True)
async def test_a_2_gb_model_info_is_no_identity(hostile: hostile_http.Hostile) -> None:
    poller = HealthPoller(LocalHost(), hostile.port)
    try:
        ident = await asyncio.wait_for(poller.identify(), STOP_S)
    finally:
        await poller.aclose()
    assert (ident.outcome, ident.model_path) == ("garbage", None)
    assert ident.detail == "/model_info answered more than 4 MiB, more than SGLang ever sends"
    assert hostile.sent("/model_info") < PROBE_BODY_MAX + SLACK


@pytest.mark.parametrize("hostile", [{"health": "drip"}], indirect=True)
async def test_a_dripping_health_is_a_timeout_at_its_deadline(hostile: hostile_http.Hostile) -> None:
    # each byte comes well inside httpx's per-read timeout: only a deadline on the whole answer ends it
    poller = HealthPoller(LocalHost(), hostile.port, health_timeout=2.0)
    try:
        result = await asyncio.wait_for(poller.probe("/health"), STOP_S)
    finally:
        await poller.aclose()
    assert (result.outcome, result.status) == ("timeout", None)
    assert hostile.sent("/health") > 0  # it was dripping, not silent


@pytest.mark.parametrize("hostile", [{"workers": "huge"}], indirect=True)
async def test_a_2_gb_router_workers_answer_gives_no_workers(hostile: hostile_http.Hostile) -> None:
    info = await asyncio.wait_for(probe_router(LocalHost(), hostile.port), STOP_S)
    assert (info.up, info.workers, info.detail) == (True, (), "/health 200")
    assert hostile.sent("/workers") < PROBE_BODY_MAX + SLACK
