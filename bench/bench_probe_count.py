"""The tool's own probes in the server's log (a script, not a test): /health requests per minute while the TUI
watches a ready server.

The TUI runs headless (run_test) over the real Monitor on LocalHost, watching the simulator; once its header shows
READY, the script counts, for WINDOW real seconds, the simulator's access lines for `GET /health` (each one also
costs the server a 1-token prefill line) and the other lines the tool's probes add. "before" is the cadence the tool
had (HealthPoller ready_interval 5 s, no query marker needed for counting); "after" is today's default.
`python bench/bench_probe_count.py [--window 60]`
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import time
from pathlib import Path

from bench_common import PY, md_table, section

from tests.helpers.sim import start_sim
from tui.core.probes import is_probe_line
from tui.sources.health import HealthPoller
from tui.sources.local import LocalHost

SPEED = 200.0
TIMEOUT_S = 60.0
_HEALTH = re.compile(rb'"GET /health(?:\?[^ "]*)? HTTP/1\.1"')
_PREFILL_1 = re.compile(rb"Prefill batch, #new-seq: 1, #new-token: 1, ")


async def trial(tmp: Path, window: float, ready_interval: float | None) -> dict[str, float]:
    from tui.sources.monitor import Monitor
    from tui.ui.app import SglangTui, UiSources
    from tui.ui.panes.header import HeaderPane

    sim = start_sim(tmp, speed=SPEED, tp=2, shards=8)
    host = LocalHost()
    try:
        await host.connect()
        health = HealthPoller(host, sim.port, **({"ready_interval": ready_interval} if ready_interval else {}))
        monitor = Monitor(host, log_path=str(sim.log), port=sim.port, remote_python=PY, sim_gpus=str(sim.gpu_state),
                          health=health)  # fmt: skip
        app = SglangTui(UiSources(batches=monitor.batches, host_label="bench"), read_only=True)
        async with app.run_test(size=(160, 48)):
            header = app.query_one(HeaderPane)
            deadline = time.monotonic() + TIMEOUT_S
            while "READY" not in header.shown and "SERVING" not in header.shown:
                if time.monotonic() > deadline:
                    raise RuntimeError("the TUI did not show READY")
                await asyncio.sleep(0.01)
            start = sim.log.stat().st_size
            await asyncio.sleep(window)
            data = sim.log.read_bytes()[start:]
            shown = header.shown
            await monitor.close()
        lines = data.decode(errors="replace").splitlines()
        per_min = 60.0 / window
        return {
            "health": len(_HEALTH.findall(data)) * per_min,
            "prefill": len(_PREFILL_1.findall(data)) * per_min,
            "marked": sum(1 for line in lines if is_probe_line(line)) * per_min,
            "lines": len([line for line in lines if line.strip()]) * per_min,
            "serving": float("SERVING" in shown),
        }
    finally:
        await host.close()
        sim.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=60.0, help="real seconds counted after READY (default 60)")
    args = parser.parse_args()
    rows = []
    default = HealthPoller.__init__.__kwdefaults__["ready_interval"]  # type: ignore[index]
    for name, interval in (("before (ready_interval 5 s)", 5.0), (f"after (ready_interval {default:g} s)", None)):
        with tempfile.TemporaryDirectory(prefix="bench-probes-") as tmp:
            got = asyncio.run(trial(Path(tmp), args.window, interval))
        rows.append([name, f"{got['health']:.1f}", f"{got['prefill']:.1f}", f"{got['marked']:.1f}",
                     f"{got['lines']:.1f}", "serving" if got["serving"] else "ready"])  # fmt: skip
    print(section(
        "The tool's own probes in the server's log (per minute, TUI watching a ready simulator)",
        md_table(["cadence", "GET /health", "1-token prefills", "lines marked as probes", "log lines in all",
                  "TUI verdict"], rows),  # fmt: skip
        notes=[f"{args.window:g} s counted after the headless TUI shows READY; simulator --tp 2 --speed {SPEED:g}, "
               "no traffic, so every line in the window is the tool's doing.",
               "each /health is an access line and (SGLang answers it with a 1-token generation) a prefill line; "
               "the parser drops both from the batch figures, and the verdict stays ready."],
        command="python bench/bench_probe_count.py",
    ))  # fmt: skip


if __name__ == "__main__":
    main()
