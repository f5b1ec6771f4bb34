"""The router's worker-health log lines (sglang-router / smg style) → WorkerHealth facts.

Recognised, case-insensitively, anywhere in a line: `Worker URL (KIND) is healthy`, `Worker URL … health check
failed…`, `Worker URL … is not healthy` / `marked unhealthy`, and `Workers initialized: N total, K healthy`.
Pure text in, facts out; the /workers endpoint, when it answers, is preferred over these (router.py).
"""

from __future__ import annotations

import re

from tui.core.deployment import WorkerHealth
from tui.core.lazyre import lazy

_WORKER = lazy(
    r"\bworker\s+(?P<url>[a-z]+://\S+?)(?:\s+\((?P<kind>prefill|decode|regular)\))?\s+"
    r"(?P<what>is healthy|is not healthy|(?:is )?marked unhealthy|health check failed)",
    re.IGNORECASE,
)


class RouterLog:
    """Folds router log bytes into the latest health per worker URL (partial lines kept for the next feed)."""

    def __init__(self) -> None:
        self._rest = ""
        self.workers: dict[str, WorkerHealth] = {}

    def feed(self, data: bytes) -> bool:
        """Reads a chunk; True when a worker's health changed."""
        text = self._rest + data.decode("utf-8", errors="replace")
        *lines, self._rest = text.split("\n")
        changed = False
        for line in lines:
            m = _WORKER.search(line)
            if m is None:
                continue
            url = m.group("url").rstrip(",;.")
            old = self.workers.get(url)
            kind = (m.group("kind") or (old.role if old else "regular")).lower()
            health = WorkerHealth(url, kind, m.group("what").lower() == "is healthy")
            if health != old:
                self.workers[url] = health
                changed = True
        return changed

    def snapshot(self) -> tuple[WorkerHealth, ...]:
        return tuple(self.workers.values())
