"""`sglang-tui export` end to end on the simulator, without Prometheus: a deployment file's member under its
`member` label beside the deployment's one verdict, bad arguments in one line, and a clean exit on SIGTERM."""

from __future__ import annotations

import signal
import time
import urllib.request
from pathlib import Path

from tests.helpers.processes import Cli, Sims
from tests.helpers.sshd import free_port
from tests.test_metrics import samples


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return samples(response.read().decode())


def test_a_deployment_is_exported_member_by_member_and_as_a_whole(sim: Sims, cli: Cli, tmp_path: Path) -> None:
    server = sim(speed=100.0, shards=8)
    deployment = tmp_path / "solo.toml"
    deployment.write_text(
        f'[[member]]\nname = "n0"\nrole = "server"\nhost = "local"\nport = {server.port}\nlog = "{server.log}"\n'
    )
    port = free_port()
    exporter = cli.popen("export", "--listen", f"127.0.0.1:{port}", "--deployment", str(deployment))
    deadline = time.monotonic() + 120
    found: dict[str, float] = {}
    while found.get('sglang_tui_phase{server="solo",phase="ready"}') != 1:
        assert time.monotonic() < deadline, "the deployment never turned ready in /metrics"
        try:
            found = scrape(port)
        except OSError:
            pass
        time.sleep(0.3)
    assert found['sglang_tui_phase{server="solo",member="n0",phase="ready"}'] == 1
    assert found['sglang_tui_ready{server="solo",member="n0"}'] == 1
    exporter.send_signal(signal.SIGTERM)
    assert exporter.wait(30) == 0


def test_bad_export_arguments_exit_two_in_one_line(cli: Cli, tmp_path: Path) -> None:
    for args, words in (
        (("export", "local"), "give --listen ADDR"),
        (("export", "--listen", "nowhere", "local"), "give HOST:PORT, :PORT or PORT"),
        (("export", "--listen", ":0", "local", "local"), "a TARGET is given twice"),
        (("export", "--textfile", str(tmp_path / "no"), "local"), "not a directory"),
        (("export", "--listen", ":0", "--deployment", str(tmp_path / "d.toml"), "local"), "not both"),
    ):
        done = cli(*args)
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
