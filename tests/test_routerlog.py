"""Router worker-health log lines → WorkerHealth (tui/core/routerlog.py)."""

from __future__ import annotations

from tui.core.deployment import WorkerHealth
from tui.core.routerlog import RouterLog


def test_lines_give_the_latest_health_per_worker_and_keep_partial_lines() -> None:
    log = RouterLog()
    assert log.feed(b"2026-02-26 13:55:38  WARN smg::core::worker_manager: src/core/worker_manager.rs:431: "
                    b"Worker http://10.0.0.1:30000 (prefill) health check failed: connection refused\n")  # fmt: skip
    assert log.snapshot() == (WorkerHealth("http://10.0.0.1:30000", "prefill", False),)
    assert not log.feed(b"2026-02-26 13:55:39  INFO smg::server: src/server.rs:875: Workers initialized: 2 total\n")
    assert not log.feed(b"... INFO smg: Worker http://10.0.0.1:30000 (prefill) is heal")  # half a line
    assert log.feed(b"thy\n")
    assert log.snapshot() == (WorkerHealth("http://10.0.0.1:30000", "prefill", True),)
    assert log.feed(b"x WARN Worker http://10.0.0.2:30001 is not healthy\n")
    assert log.snapshot()[1] == WorkerHealth("http://10.0.0.2:30001", "regular", False)
