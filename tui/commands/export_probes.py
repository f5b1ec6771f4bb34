"""`export`'s `/livez` and `/readyz`: `probe --alive` and `probe --ready` answered over HTTP from the state export
already keeps (issue 32), so a pod can run `export` as a sidecar and give kubelet httpGet probes: no process per
call, no Python start on a busy node. The verdict is tui.core.probe_rule's, exactly as `probe` exits: 200 where
the probe would exit 0, else 503; the body is the probe's one line (an srtctl job's benchmark word after it where it
disagrees with the servers', its status unchanged), and the header `X-Sglang-Tui-Exit` its code.

With several servers (targets, or a deployment and its members) `?server=NAME` picks one: a deployment answers
for the whole (its one verdict), never a member. Without it and with several, 400; an unknown name, 404; each
with one line naming the servers there are.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qs

from tui.core.deployment import Combined
from tui.core.probe_rule import EXIT_OK, Mode, probe_verdict
from tui.core.srtlayout import disagreement_short
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
    state = servers[name]
    found = probe_verdict(state, mode, now)
    status = "200 OK" if found.code == EXIT_OK else "503 Service Unavailable"
    disagrees = state.benchmark_disagrees if isinstance(state, Combined) else None  # an srtctl job's (issue 36)
    said = f"{found.line} · {disagreement_short(disagrees)}" if disagrees is not None else found.line
    return status, said + "\n", {"X-Sglang-Tui-Exit": str(found.code)}
