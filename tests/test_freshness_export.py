"""Freshness where fleets look: a real Prometheus scraping `export` every second over a real loopback sshd; the
sshd (and every session it forked) is killed for real, and the server with it. Within one scrape interval of the
loss being folded (a reconnect past tui.core.freshness.FRESH_S, 5 s: about 7 s here, well inside a usual 15 s
scrape) `sglang_tui_up` and `sglang_tui_ready` read 0 and `sglang_tui_last_seen_seconds` appears, in Prometheus'
own range query. And `fleet --json` says the loss: a row whose host is frozen (SIGSTOP on the sshd and its sessions:
the link stays up, its process watch goes quiet) reads "cannot connect … last seen ready", then ready again from
fresh facts once the host thaws."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.processes import Cli, PipeLines, Sims, Spawner
from tests.helpers.sim import ROOT, wait_ready
from tests.helpers.sshd import Sshd, free_port, sshd_available
from tests.test_export_prometheus import api, until

pytestmark = pytest.mark.skipif(not sshd_available(), reason="OpenSSH sshd is not installed")


UP = ("ready", "serving")  # serving: the simulator decodes its own warmup request, as SGLang does


def _ssh(sshd: Sshd) -> list[str]:
    return ["--ssh-config", str(sshd.ssh_config), "--remote-python", sys.executable, "--no-history"]


def test_prometheus_sees_up_and_ready_drop_when_the_host_is_lost(
    sim: Sims, spawn: Spawner, fresh_sshd: Sshd, tmp_path: Path
) -> None:
    server = wait_ready(sim(speed=200.0, shards=4, speculative="none"))
    name = f"testhost:{server.port}:{server.log}"
    exporter = free_port()
    spawn(
        [sys.executable, "-m", "tui", "export", "--listen", f"127.0.0.1:{exporter}", *_ssh(fresh_sshd),
         "--sim-gpus", str(server.gpu_state), name],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    prom = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n"
        f"  - job_name: sglang-tui\n    static_configs: [{{targets: ['127.0.0.1:{exporter}']}}]\n"
    )
    spawn(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{prom}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    def value(family: str) -> float | None:
        found = api(prom, "query", query=f'{family}{{server="{name}"}}')["result"]
        return float(found[0]["value"][1]) if found else None

    until("ready 1 and up 1 in Prometheus", lambda: value("sglang_tui_ready") == 1 and value("sglang_tui_up") == 1)
    lost = time.time()
    fresh_sshd.kill()  # the host is gone: its sshd and every session, and the server with it
    server.stop()

    def after_loss(family: str) -> list[float]:
        data = api(prom, "query_range", query=f'{family}{{server="{name}"}}', start=str(lost), end=str(time.time()),
                   step="1")  # fmt: skip
        return [float(v) for series in data["result"] for _, v in series["values"]]

    until("up 0 in a range query after the loss", lambda: 0.0 in after_loss("sglang_tui_up"))
    until("ready 0 in a range query after the loss", lambda: 0.0 in after_loss("sglang_tui_ready"))
    seen = until("last_seen_seconds after the loss", lambda: after_loss("sglang_tui_last_seen_seconds"))
    assert all(s >= 0 for s in seen), seen
    assert value("sglang_tui_connected") == 0 and value("sglang_tui_health_ok") == 0  # no 200 from before stands
    assert value("sglang_tui_ready") == 0  # and it stays 0: nothing was seen since


def _after(lines: PipeLines, start: int, prefix: str | tuple[str, ...], timeout: float = 90.0) -> dict[str, Any]:
    """The first object after line `start` whose reason begins with `prefix` (waited for)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [json.loads(line) for line in list(lines.lines)[start:]]
        hit = next((o for o in found if o["reason"].startswith(prefix)), None)
        if hit is not None:
            return hit
        assert time.monotonic() < deadline, f"no reason {prefix!r} after line {start}:\n{lines.text()}"
        time.sleep(0.2)


def test_fleet_json_says_a_frozen_host_and_ready_again_once_it_thaws(sim: Sims, cli: Cli, fresh_sshd: Sshd) -> None:
    server = wait_ready(sim(speed=200.0, shards=4, speculative="none"))
    stream = cli.popen("fleet", "--json", f"testhost:{server.port}:{server.log}", *_ssh(fresh_sshd),
                       "--sim-gpus", str(server.gpu_state))  # fmt: skip
    assert stream.stdout is not None
    lines = PipeLines(stream.stdout)
    _after(lines, 0, UP)
    said = len(lines.lines)
    fresh_sshd.signal_tree(signal.SIGSTOP)
    try:
        lost = _after(lines, said, "cannot connect")
        assert re.search(r"last seen (ready|serving) \S+ ago", lost["reason"]), lost["reason"]
    finally:
        fresh_sshd.signal_tree(signal.SIGCONT)
    _after(lines, len(lines.lines), UP)  # from fresh facts: the watch reports again
    stream.send_signal(signal.SIGTERM)
    assert stream.wait(30) == 0
