"""`export`'s `/livez` and `/readyz`: `probe --alive` and `probe --ready` answered over HTTP from the state export
already keeps (issue 32), so a pod can run `export` as a sidecar and give kubelet httpGet probes: no process per
call, no Python start on a busy node. The verdict is tui.core.probe_rule's, exactly as `probe` exits: 200 where
the probe would exit 0, else 503; the body is the probe's one line, and the header `X-Sglang-Tui-Exit` its code.

With several servers (targets, or a deployment and its members) `?server=NAME` picks one: a deployment answers
for the whole (its one verdict), never a member. Without it and with several, 400; an unknown name, 404; each
with one line naming the servers there are.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qs

from tui.core.probe_rule import EXIT_OK, Mode, probe_verdict
from tui.core.state import Readiness

ROUTES: dict[str, Mode] = {"/livez": "alive", "/readyz": "ready"}


def answer(route: str, query: str, servers: Mapping[str, Readiness], now: float) -> tuple[str, str, dict[str, str]]:
    """(HTTP status, body, extra headers) of GET route?query over these servers (each by its name)."""
    mode = ROUTES[route]
    names = ", ".join(sorted(servers)) or "none yet"
    asked = parse_qs(query).get("server")
    if asked:
        name = asked[-1]
        if name not in servers:
            return "404 Not Found", f"no server {name!r} here (servers: {names})\n", {}
    elif len(servers) == 1:
        name = next(iter(servers))
    else:
        return "400 Bad Request", f"{len(servers)} servers here: ask {route}?server=NAME (servers: {names})\n", {}
    found = probe_verdict(servers[name], mode, now)
    status = "200 OK" if found.code == EXIT_OK else "503 Service Unavailable"
    return status, found.line + "\n", {"X-Sglang-Tui-Exit": str(found.code)}
