"""A real Prometheus (Debian's `prometheus`, installed by .ci/run) scraping `sglang-tui export` every second while
two simulated servers start: the phase moves loading → capture → ready in its own query API, and the example
alert rules fire SGLangStartupStalled for the one that hangs. The rules' logic itself is `promtool test rules`'s
(tests/test_examples.py); this is the wiring: names, labels, the exposition format, a live scrape."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tests.helpers.processes import Sims, Spawner
from tests.helpers.sim import ROOT
from tests.helpers.sshd import free_port

RULES = ROOT / "examples" / "prometheus" / "sglang-tui-alerts.yml"


def api(port: int, path: str, **params: str) -> Any:
    url = f"http://127.0.0.1:{port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


def until(what: str, check: Any, timeout: float = 120.0) -> Any:
    """Poll `check()` until it returns something truthy; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = check()
        except OSError:  # Prometheus not listening yet
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not seen within {timeout} s")
        time.sleep(0.5)


def test_prometheus_sees_the_phases_move_and_the_stalled_alert_fire(sim: Sims, spawn: Spawner, tmp_path: Path) -> None:
    slow = sim(path=tmp_path / "slow", speed=20.0, shards=16, extra=("--slow", "loading_weights=2,cuda_graph=4"))
    hung = sim(path=tmp_path / "hung", speed=40.0, shards=16, fault="hang-weights")
    exporter = free_port()
    spawn(
        [sys.executable, "-m", "tui", "export", "--listen", f"127.0.0.1:{exporter}", "--stall-after", "3",
         "--sim-gpus", str(slow.gpu_state), f"local:{slow.port}:{slow.log}", f"local:{hung.port}:{hung.log}"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    prom = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: [{json.dumps(str(RULES))}]\n"
        "scrape_configs:\n"
        f"  - job_name: sglang-tui\n    static_configs: [{{targets: ['127.0.0.1:{exporter}']}}]\n"
    )
    started = time.time()
    spawn(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{prom}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    slow_name = f"local:{slow.port}:{slow.log}"

    def phases_seen() -> list[str]:
        """The phase each scrape saw, in time order (one series per phase, 1 while it was the current one),
        consecutive repeats merged; up to ready, or [] before it (a range query's last step may fall before
        the scrape an instant query already sees)."""
        data = api(prom, "query_range", query=f'sglang_tui_phase{{server="{slow_name}"}} == 1',
                   start=str(started), end=str(time.time()), step="1")  # fmt: skip
        at = sorted((float(t), series["metric"]["phase"]) for series in data["result"] for t, _ in series["values"])
        order = [phase for i, (_, phase) in enumerate(at) if i == 0 or at[i - 1][1] != phase]
        return order if order and order[-1] == "ready" else []

    order = until("the slow server's phases up to ready in Prometheus", phases_seen)
    assert "loading_weights" in order and "cuda_graph" in order, order
    assert order.index("loading_weights") < order.index("cuda_graph") < order.index("ready"), order

    hung_name = f"local:{hung.port}:{hung.log}"

    def stalled_alert() -> list[dict[str, Any]]:
        alerts = api(prom, "alerts")["alerts"]
        return [a for a in alerts if a["labels"]["alertname"] == "SGLangStartupStalled" and a["state"] == "firing"]

    firing = until("SGLangStartupStalled firing", stalled_alert)
    assert [a["labels"]["server"] for a in firing] == [hung_name]  # the hang, not the slow start
    assert hung.alive()  # hung, not dead
    shards = api(prom, "query", query=f'sglang_tui_weight_shards_loaded{{server="{hung_name}"}}')["result"]
    assert 0 < float(shards[0]["value"][1]) < 16  # it hangs part way through its weights
