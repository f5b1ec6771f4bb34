"""`export`'s /livez and /readyz (issue 32): `probe --alive` / `--ready` over HTTP, asked with a real `curl` as a
kubelet httpGet probe asks, through a whole simulated startup: 503 while starting, 200 once ready, 503 after the
server is killed; with several targets, `?server=NAME` picks one, and no name or an unknown one is a 400 / 404 in
one line."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.helpers.processes import Cli, Sims
from tests.helpers.sshd import free_port

WAIT_S = 180.0


def curl(port: int, route: str) -> tuple[int, str]:
    """(HTTP status, body) of GET route from the exporter, by curl (0: no answer yet)."""
    done = subprocess.run(
        ["curl", "-s", "-m", "10", "-o", "-", "-w", "\n%{http_code}", f"http://127.0.0.1:{port}{route}"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    body, _, code = done.stdout.rpartition("\n")
    return int(code or 0), body


def until(port: int, route: str, status: int) -> list[tuple[int, str]]:
    """Every answer of `route` up to the first with this status (the last one), polled."""
    seen: list[tuple[int, str]] = []
    deadline = time.monotonic() + WAIT_S
    while not seen or seen[-1][0] != status:
        assert time.monotonic() < deadline, f"{route} never answered {status}: {seen[-3:]}"
        time.sleep(0.2)
        seen.append(curl(port, route))
    return seen


def test_readyz_is_503_while_starting_200_once_ready_and_503_after_a_kill(sim: Sims, cli: Cli) -> None:
    server = sim(speed=20.0, shards=16)  # a startup of many seconds here: the exporter sees it start
    port = free_port()
    exporter = cli.popen("export", "--listen", f"127.0.0.1:{port}", f"local:{server.port}:{server.log}")
    starting = until(port, "/readyz", 503)[-1]
    assert server.alive() and "ready" not in starting[1].split(":")[0], starting  # not yet: the startup's line
    live = curl(port, "/livez")
    assert live[0] == 200, live  # a slow start is alive
    ready = until(port, "/readyz", 200)
    assert all(code in (0, 503) for code, _ in ready[:-1]) and ready[-1][1].startswith("ready"), ready[-3:]
    assert curl(port, "/livez")[0] == 200
    server.stop()  # SIGKILL: the server is gone
    gone = until(port, "/readyz", 503)[-1]
    assert gone[1].strip(), gone
    exporter.terminate()
    assert exporter.wait(30) == 0


def test_with_several_targets_server_picks_one_and_a_missing_or_unknown_name_is_one_line(
    sim: Sims, cli: Cli, tmp_path: Path
) -> None:
    server = sim(speed=200.0, shards=4)
    nobody = free_port()
    named, empty = f"local:{server.port}:{server.log}", f"local:{nobody}"
    port = free_port()
    exporter = cli.popen("export", "--listen", f"127.0.0.1:{port}", named, empty)
    until(port, f"/readyz?server={named}", 200)
    assert curl(port, f"/livez?server={named}")[0] == 200
    assert curl(port, f"/readyz?server={empty}")[0] == 503  # nothing listens there: never ready
    code, body = curl(port, "/readyz")
    assert code == 400 and "?server=NAME" in body and named in body and body.count("\n") == 1, body
    code, body = curl(port, "/livez?server=gpu9")
    assert code == 404 and "'gpu9'" in body and body.count("\n") == 1, body
    exporter.terminate()
    assert exporter.wait(30) == 0
