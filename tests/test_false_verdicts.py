"""Issue 17, the verdict side: `sglang-tui wait local|SSH …` never says ready for what is not this server, ready.

Real parts: `python -m tui wait` as a subprocess, real HTTP servers started here on 127.0.0.1 (one that answers
200 with a garbage body to everything, one that accepts and never answers), real log files, a real sshd.
(a) a finished run's log with nothing on the port; (b) a foreign server with the log empty, missing or not
given; (c) /health hanging with the log at fired up; (d) a log that starts with a NUL run, in replay and wait.

Each wait stops at the line that decides it: a dead server's is "failed" once the process watch's grace for a
new launch is over (15 s, tui.core.find_grace.FIND_GRACE_S); where only a timeout can be the outcome, the
--timeout is a few seconds past the state that decides it, and the verdict names that state
(tests.helpers.verdicts.wait_decided: a loaded machine that reaches it later gets a longer run).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers.deadline import deadline
from tests.helpers.processes import Cli, Sims, Spawner
from tests.helpers.sshd import free_port
from tests.helpers.verdicts import FOREIGN, SILENT, Listener, finished_log, replay_json, run_wait, wait_decided
from tui.core.explain import PROCESS_EXITED
from tui.core.wording import verdict_line

NOT_READY = {"ready", "serving"}

# ------------------------------------------------------------------------------------- (a) dead server, old log


@pytest.mark.parametrize("where", ["local", "ssh"])
def test_a_finished_runs_log_with_nothing_on_the_port_is_failed(where: str, tmp_path: Path, cli: Cli,
                                                               request: pytest.FixtureRequest) -> None:  # fmt: skip
    sshd = request.getfixturevalue("sshd") if where == "ssh" else None
    port = free_port()
    log = tmp_path / "old.log"
    log.write_text(finished_log(port))
    replayed = replay_json(cli, log)
    assert replayed["phase"] == "ready"  # the log alone says fired up …
    out = run_wait(cli, sshd, "--log", str(log), "--port", str(port), "--timeout", "60")
    assert out.code == 1, out.stderr  # … but nothing runs: failed, never exit 0
    assert not out.phases() & NOT_READY, out.stdout
    final = out.last_json()
    # What decides it: the processes, not the log (no failure line there), said the server is gone.
    assert final["phase"] == "failed" and final["error"] == {"kind": "other", "line": PROCESS_EXITED, "remedy": None}, (
        final
    )
    assert "with no failure line in the log (a dead process, not a stall)" in final["reason"], final["reason"]
    assert out.verdict() == f"sglang-tui wait: {final['reason']}", out.stderr  # the JSON reason, word for word
    # The log was read to its fired-up line: every span of the replay, then failed in place of ready.
    waited = [span["phase"] for span in final["timeline"]]
    assert waited[:-1] == [span["phase"] for span in replayed["timeline"]][:-1] and waited[-1] == "failed"


def test_a_finished_run_stopped_by_a_signal_says_so(tmp_path: Path, cli: Cli) -> None:
    port = free_port()
    log = tmp_path / "old.log"
    log.write_text(finished_log(port, sigterm=True))
    out = run_wait(cli, None, "--log", str(log), "--port", str(port), "--timeout", "60")
    assert out.code == 1 and not out.phases() & NOT_READY, out.stderr
    assert out.verdict().startswith("sglang-tui wait: stopped (by a signal from outside sglang-tui): "), out.stderr
    assert "SIGTERM received" in out.verdict()
    assert "SIGTERM received" in out.last_json()["error"]["line"]  # the log's line says why, not the processes


# --------------------------------------------------------------------------- (b) a foreign 200 on the port


@pytest.mark.parametrize("where", ["local", "ssh"])
def test_a_foreign_200_is_never_ready(where: str, tmp_path: Path, cli: Cli, spawn: Spawner,
                                      request: pytest.FixtureRequest) -> None:  # fmt: skip
    """It answers 200 at once and its /model_info is not SGLang's: the tool says "something else answers" within
    a second or two, and nothing it does later can make that server SGLang's. 6 s is past that line."""
    sshd = request.getfixturevalue("sshd") if where == "ssh" else None
    foreign = Listener(spawn, tmp_path, FOREIGN)
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    cases = {
        "log empty": ("--log", str(empty)),
        "log missing": ("--log", str(tmp_path / "not-there.log")),
        "no log": (),
    }
    try:
        with ThreadPoolExecutor(len(cases)) as pool:
            futures = {name: pool.submit(wait_decided, cli, sshd, *args, "--port", str(foreign.port), timeout=6,
                                         decides=lambda out: out.says("something else answers on port"))
                       for name, args in cases.items()}  # fmt: skip
            outcomes = {name: f.result() for name, f in futures.items()}
    finally:
        paths = foreign.stop()
    assert "/health" in paths and "/model_info" in paths  # it was asked, and asked what it is
    for name, out in outcomes.items():
        assert out.code == 7, (name, out.stderr)  # timed out waiting: not ready
        assert not out.phases() & NOT_READY, (name, out.stdout)
        assert f"something else answers on port {foreign.port}" in out.verdict(), (name, out.stderr)
        assert "not SGLang's" in out.verdict(), (name, out.stderr)


# --------------------------------------------------------------------------------- (c) /health never answers


def test_a_hanging_health_after_fired_up_is_not_ready(tmp_path: Path, cli: Cli, spawn: Spawner) -> None:
    """The first /health hangs until the poller's 30 s read timeout (health.HEALTH_READ_TIMEOUT_S) gives up: that
    is the deciding line ("up but not answering /health … timeout"), and 35 s is just past it."""
    report = tmp_path / "in-flight.txt"
    silent = Listener(spawn, tmp_path, SILENT, str(report))
    log = tmp_path / "server.log"
    log.write_text(finished_log(silent.port))
    try:
        out = wait_decided(
            cli,
            None,
            "--log",
            str(log),
            "--port",
            str(silent.port),
            timeout=35,
            decides=lambda out: out.says("up but not answering /health for", "timeout"),
        )
    finally:
        silent.stop()
    assert out.code == 7, out.stderr  # a server that never answers /health is never ready
    assert not out.phases() & NOT_READY, out.stdout
    assert "up but not answering /health for" in out.verdict() and "timeout" in out.verdict(), out.stderr
    assert "1-token generation" in out.verdict()
    seen = report.read_text().split()
    assert seen[:2] == ["max_in_flight", "1"], seen  # the long read timeout ran out; never two at once
    assert int(seen[3]) >= 1


# ----------------------------------------------------------------------------- (d) a NUL run starts the log


def test_a_nul_prefixed_log_replays_and_waits_like_the_plain_one(tmp_path: Path, cli: Cli) -> None:
    port = free_port()
    plain = tmp_path / "plain.log"
    plain.write_text(finished_log(port))
    nul = tmp_path / "cleared.log"
    nul.write_bytes(b"\x00" * 70_000 + plain.read_bytes())  # `: > LOG` under a writer at offset 70000
    assert replay_json(cli, nul) == replay_json(cli, plain)  # no "binary data": the NUL run is nothing
    with ThreadPoolExecutor(2) as pool:
        a, b = (
            pool.submit(run_wait, cli, None, "--log", str(p), "--port", str(port), "--timeout", "60")
            for p in (nul, plain)
        )
        with_nul, without = a.result(), b.result()
    for out in (with_nul, without):
        assert out.code == 1 and not out.phases() & NOT_READY, out.stderr
    assert _without_clock(with_nul.last_json()) == _without_clock(without.last_json())
    replayed = [span["phase"] for span in replay_json(cli, nul)["timeline"]]
    waited = [span["phase"] for span in with_nul.last_json()["timeline"]]
    assert replayed[-1] == "ready" and waited[-1] == "failed" and waited[:-1] == replayed[:-1]


def _without_clock(report: dict[str, object]) -> dict[str, object]:
    """The report less what the wall clock decides: the durations (the span a death ends has no log time) and how
    long it has been quiet when the line was printed."""
    spans = [{k: v for k, v in span.items() if k != "duration_s"} for span in report["timeline"]]  # type: ignore[attr-defined]
    stall = {k: v for k, v in report["stall"].items() if k != "quiet_s"}  # type: ignore[attr-defined]
    return {**report, "timeline": spans, "stall": stall}


# ------------------------------------------------------------------------- a stop from outside, live (item 5)


async def test_a_sigterm_from_someone_else_is_stopped_from_outside(sim: Sims, spawn: Spawner) -> None:
    """The simulator (real processes, log and HTTP) is ready; then someone else sends its main process SIGTERM.
    (`spawn`: the Monitor's LocalHost starts the host's commands in-process.)"""
    import os
    import signal

    from tui.core.readiness import reduce
    from tui.core.state import Phase, Readiness
    from tui.sources.local import LocalHost
    from tui.sources.monitor import Monitor

    server = sim(speed=400.0, tp=2, shards=4)
    monitor = Monitor(LocalHost(), log_path=str(server.log), port=server.port, sim_gpus=str(server.gpu_state))
    state = Readiness.of(health_probed=True, health_port=server.port)
    signalled = False
    try:
        async with deadline(90):
            async for batch in monitor.batches():
                for event in batch:
                    state = reduce(state, event, time.time())
                monitor.set_phase(state.phase)
                if state.phase is Phase.READY and not signalled:
                    os.kill(server.pid, signal.SIGTERM)  # not sglang-tui's doing
                    signalled = True
                if state.phase is Phase.FAILED:
                    break
    finally:
        await monitor.close()
        server.stop()
    assert signalled and state.error is not None and state.error.stopped_by == "outside", verdict_line(state)
    assert verdict_line(state).startswith("stopped (by a signal from outside sglang-tui): ")
    assert "SIGTERM received" in verdict_line(state)


# ------------------------------------------------------------------------------------------- --no-health


def test_no_health_is_ready_from_the_log_and_probes_nothing(sim: Sims, cli: Cli) -> None:
    server = sim(speed=400.0, tp=2, shards=4)
    try:
        out = run_wait(cli, None, "--log", str(server.log), "--port", str(server.port), "--sim-gpus",
                       str(server.gpu_state), "--timeout", "60", "--no-health")  # fmt: skip
    finally:
        server.stop()
    assert out.code == 0, out.stderr
    assert (
        out.verdict() == "sglang-tui wait: ready: the log says fired up (log only: /health is not probed, --no-health)"
    )
    log = server.log.read_text(errors="replace")
    assert '"GET /health' not in log and '"GET /model_info HTTP/1.1" 200' in log  # only the warmup's own request
    assert log.count("GET /model_info") == 1


def test_no_health_on_a_dead_servers_log_is_failed(tmp_path: Path, cli: Cli) -> None:
    port = free_port()
    log = tmp_path / "old.log"
    log.write_text(finished_log(port))
    out = run_wait(cli, None, "--log", str(log), "--port", str(port), "--timeout", "60", "--no-health")
    assert out.code == 1 and not out.phases() & NOT_READY, out.stderr
    assert out.last_json()["error"] == {
        "kind": "other",
        "line": PROCESS_EXITED,
        "remedy": None,
    }  # no process: the log's word is void


@pytest.mark.parametrize("where", ["local", "ssh"])
def test_a_server_from_before_is_not_this_launch(where: str, sim: Sims, cli: Cli, tmp_path: Path,
                                                 request: pytest.FixtureRequest) -> None:  # fmt: skip
    """`launch … > LOG & wait --log LOG`: LOG is still empty (torch imports) while the previous SGLang, ready and
    of the same model, still holds the port. Its /health 200 and /model_info are SGLang's, and still not ready.
    The deciding line ("/model_info names …, but the log shows no launch yet") comes once the empty log has been
    read for a few seconds (tui.core.answerer.LOG_FIRST_READ_S); 8 s is past it."""
    from tests.helpers.sim import wait_for_log

    sshd = request.getfixturevalue("sshd") if where == "ssh" else None
    server = sim(speed=400.0, tp=2, shards=4)
    empty = tmp_path / "new-launch.log"
    empty.write_bytes(b"")
    try:
        wait_for_log(server, b"fired up", timeout=60)
        out = wait_decided(
            cli,
            sshd,
            "--log",
            str(empty),
            "--port",
            str(server.port),
            timeout=8,
            decides=lambda out: out.says("/model_info names "),
        )
    finally:
        server.stop()
    assert out.code == 7 and not out.phases() & NOT_READY, out.stderr
    assert f"something else answers on port {server.port}: /model_info names " in out.verdict(), out.stderr
    assert "the log shows no launch yet (a server from before?)" in out.verdict()
