"""The router member of a PD deployment: its health endpoints, its workers' health, the prefill bootstrap port.

sglang-router (sgl-model-gateway) answers GET /health and GET /workers, the latter as
`{"workers": [{"url": …, "healthy": true, "worker_type": "prefill"|"decode"|"regular", …}], "total": N,
"healthy": K}`. Each prefill server's bootstrap port (default 8998) is checked by a connection through its
host's forward: any answer means it listens. One probe each every `interval` seconds; results are
`RouterStatus` items on the deployment monitor's stream (they are not reducer events).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx

from tui.core.deployment import RouterInfo, WorkerHealth
from tui.core.limits import PROBE_BODY_MAX
from tui.sources.host import Host, HostAuthError, HostError
from tui.sources.httpread import get_capped

INTERVAL_S = 1.0
TIMEOUT_S = 3.0


@dataclass(frozen=True)
class RouterStatus:
    """The router's facts (info, for a router member) or the bootstrap ports' state (name → open)."""

    info: RouterInfo
    bootstrap: dict[str, bool] | None = None


def parse_workers(body: object) -> tuple[WorkerHealth, ...]:
    """The /workers answer as WorkerHealth; anything unexpected gives no workers."""
    items = body.get("workers") if isinstance(body, dict) else None
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            role = str(item.get("worker_type") or item.get("type") or "regular").lower()
            out.append(WorkerHealth(item["url"], role, bool(item.get("healthy"))))
    return tuple(out)


async def _get(host: Host, port: int, path: str) -> httpx.Response:
    """One GET, its body capped and its whole time bounded (a dripping answer ends at TIMEOUT_S)."""
    base = await host.http_base_url(port)
    async with httpx.AsyncClient(base_url=base, trust_env=False, timeout=TIMEOUT_S) as client:
        return await get_capped(client, path, cap=PROBE_BODY_MAX, total_s=TIMEOUT_S)


async def probe_router(host: Host, port: int) -> RouterInfo:
    try:
        health = await _get(host, port, "/health")
    except HostAuthError:
        raise
    except (HostError, httpx.HTTPError, OSError) as exc:
        return RouterInfo(False, (), "refused" if isinstance(exc, httpx.ConnectError) else type(exc).__name__)
    workers: tuple[WorkerHealth, ...] = ()
    try:
        answer = await _get(host, port, "/workers")
        if answer.status_code == 200:
            workers = parse_workers(answer.json())
    except (HostError, httpx.HTTPError, OSError, ValueError):
        pass
    return RouterInfo(health.status_code == 200, workers, f"/health {health.status_code}")


async def port_open(host: Host, port: int) -> bool:
    """Whether something listens on 127.0.0.1:PORT of the host (an HTTP answer of any status, or any bytes)."""
    try:
        await _get(host, port, "/health")
        return True
    except (httpx.ConnectError, httpx.ConnectTimeout, HostError, OSError):
        return False
    except httpx.HTTPError:
        return True  # it answered, just not as we asked


async def router_statuses(router: tuple[Host, int] | None, prefills: list[tuple[str, Host, int]],
                          interval: float = INTERVAL_S) -> AsyncIterator[RouterStatus]:  # fmt: skip
    """Forever: one RouterStatus per round (the router's facts and the prefill bootstrap ports)."""
    while True:
        info = await probe_router(*router) if router is not None else RouterInfo()
        boot = {name: await port_open(host, port) for name, host, port in prefills}
        yield RouterStatus(info, boot or None)
        await asyncio.sleep(interval)
