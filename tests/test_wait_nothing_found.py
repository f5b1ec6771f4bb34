"""`wait` says at once what is missing and does not sit out --timeout for it (issue 23, item 7): real processes,
real HTTP. Each test stops at the deciding line: the first line names what is missing, and a short
--missing-log-grace ends the wait with exit 6; a log that appears within the grace (`launch … > log &`) is
followed to ready."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.ports import free_port
from tests.helpers.processes import Cli, Sims


def test_no_log_and_nothing_listening_is_the_first_line_and_exit_6(cli: Cli) -> None:
    port = free_port()
    run = cli("wait", "local", "--port", str(port), "--missing-log-grace", "1", "--timeout", "60", timeout=60)
    lines = run.stderr.strip().splitlines()
    said = f"nothing listens on port {port} and no log was given"
    assert run.returncode == 6, run.stderr
    assert said in lines[0] and "waiting for the first log line" not in lines[0]
    assert lines[-1].startswith(f"sglang-tui wait: nothing found: {said} (for "), lines[-1]


def test_a_log_that_appears_within_the_grace_is_followed_to_ready(tmp_path: Path, cli: Cli, sim: Sims) -> None:
    where = tmp_path / "run"
    log, port = where / "sim.log", free_port()
    waiting = cli.popen("wait", "local", "--log", str(log), "--port", str(port), "--timeout", "120")
    assert waiting.stderr is not None
    first = waiting.stderr.readline()
    assert f"log file missing: {log}" in first and "--missing-log-grace" in first, first
    sim(path=where, port=port, tp=2, shards=8, speed=500.0)  # `launch … > log &`: the file appears now
    rest = waiting.stderr.read()
    assert waiting.wait(timeout=120) == 0, first + rest
    assert "nothing found" not in rest and "ready" in rest.strip().splitlines()[-1]
