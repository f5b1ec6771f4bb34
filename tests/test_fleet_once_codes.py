"""`fleet --once` is `wait` per row (DESIGN.md, third round): each row's verdict after its first look, the codes of
the one table, the worst row's code; a row that cannot be reached costs itself, not the table. Every run here has
`--timeout 60` and ends on its rows' verdicts, long before it (the test waits for the process, not for a time).
Real parts: the simulator (its log, its processes, its /health), a loopback sshd killed for real."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Sims
from tests.helpers.sim import wait_for_log, wait_ready
from tests.helpers.sshd import Sshd, free_port, sshd_available

ONCE = ("fleet", "--once", "--no-history", "--timeout", "60")


def _rows(stdout: str) -> dict[str, str]:
    lines = stdout.splitlines()
    assert lines and lines[0].split()[:3] == ["NAME", "WHERE", "PHASE"], stdout
    return {line.split()[0]: line for line in lines[1:]}


@pytest.mark.skipif(not sshd_available(), reason="OpenSSH sshd is not installed")
def test_an_unreachable_host_is_four_at_once_and_costs_only_its_row(sim: Sims, cli: Cli, fresh_sshd: Sshd) -> None:
    server = wait_ready(sim(speed=200.0, shards=4, speculative="none"))
    fresh_sshd.kill()  # nothing answers on the SSH port: the connection is refused
    here, there = f"local:{server.port}:{server.log}", f"testhost:{server.port}:{server.log}"
    done = cli(*ONCE, here, there, "--ssh-config", str(fresh_sshd.ssh_config), "--remote-python", sys.executable,
               timeout=120)  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    rows = _rows(done.stdout)
    assert rows[there].split()[2] == "UNREACHABLE" and "cannot connect" in rows[there], rows[there]
    assert rows[here].split()[2] in ("ready", "serving"), rows[here]  # the reachable row has its own verdict
    # (serving: the simulator decodes its own warmup request, as SGLang does)
    last = done.stderr.strip().splitlines()[-1]  # the deciding row, said as `wait` says its verdict
    assert last.startswith(f"sglang-tui fleet: {there}: cannot connect"), done.stderr


def test_nothing_listening_and_no_log_is_six(cli: Cli) -> None:
    port = free_port()
    done = cli(*ONCE, f"local:{port}")
    assert done.returncode == 6, done.stdout + done.stderr
    assert f"nothing listens on port {port} and no log was given" in done.stdout


def test_a_server_killed_before_the_look_is_one(sim: Sims, cli: Cli) -> None:
    server = sim(speed=5.0, shards=64, speculative="none")
    wait_for_log(server, b"Load weight begin", 60)
    server.stop()  # killed mid-load: its log still reads "loading weights"
    done = cli(*ONCE, f"local:{server.port}:{server.log}")
    assert done.returncode == 1, done.stdout + done.stderr
    row = _rows(done.stdout)[f"local:{server.port}:{server.log}"]
    assert row.split()[2] == "FAILED" and "no process of the server is left" in row, row


def test_a_hung_load_is_three(sim: Sims, cli: Cli, tmp_path: Path) -> None:
    server = sim(speed=40.0, shards=16, speculative="none", fault="hang-weights")
    wait_for_log(server, b"Load weight begin", 60)
    done = cli(*ONCE, "--stall-after", "3", f"local:{server.port}:{server.log}")
    assert done.returncode == 3, done.stdout + done.stderr
    assert server.alive()  # hung, not dead
    row = _rows(done.stdout)[f"local:{server.port}:{server.log}"]
    assert "stalled" in row, row
