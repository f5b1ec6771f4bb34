"""sglang-tui's own probes as they show in the server's log: they are not the server's work.

Every HTTP probe the tool sends carries PROBE_QUERY, so its uvicorn access line reads
`"GET /health?from=sglang-tui HTTP/1.1" 200 OK`. SGLang answers `/health` with a 1-token generation
(`input_ids=[0]`, `max_new_tokens=1`) that it runs only when the scheduler is idle, so its prefill line is
`Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, … #running-req: 0, …`: a health check's (ours or a
load balancer's), never a user's request, and no decode line follows it (one token is the prefill's own).
"""

from __future__ import annotations

import re

from tui.core.lazyre import lazy

PROBE_QUERY = "from=sglang-tui"
_ACCESS_MARK = "?" + PROBE_QUERY
_PREFILL_MARKS = ("#new-seq: 1, #new-token: 1, #cached-token: 0,", "#running-req: 0,")
_PREFILL_MARKS_B = tuple(m.encode() for m in _PREFILL_MARKS)


def probe_path(endpoint: str) -> str:
    """The URL path the tool requests for an endpoint ("/health" → "/health?from=sglang-tui")."""
    return endpoint + ("&" if "?" in endpoint else "?") + PROBE_QUERY


def is_probe_access(line: str) -> bool:
    """An access line of one of the tool's own requests."""
    return _ACCESS_MARK in line and "HTTP/" in line


_ACCESS = lazy(r'"[A-Z]+ (/[^ ?"]*)\?[^ "]*' + re.escape(PROBE_QUERY) + r'[^ "]* HTTP/[0-9.]+" (\d{3})')


def probe_access(line: str) -> tuple[str, int] | None:
    """(endpoint, status) of an access line of one of the tool's own requests, else None."""
    found = _ACCESS.search(line)
    return (found.group(1), int(found.group(2))) if found else None


def is_probe_prefill(line: str | bytes) -> bool:
    """The prefill of a health check's 1-token generation on an idle server."""
    if isinstance(line, bytes):
        return all(m in line for m in _PREFILL_MARKS_B)
    return all(m in line for m in _PREFILL_MARKS)


def is_probe_line(line: str) -> bool:
    """Either kind of probe line (the log pane dims these and can hide them)."""
    if "HTTP/" in line and is_probe_access(line):
        return True
    return "Prefill batch" in line and is_probe_prefill(line)
