"""Issue 17, tried again as the red-team would (as root, locally and over a real sshd, and as another uid):
an SGLang look-alike naming the log's model while the log is a previous run's, a server that answers 200 and
then dies, a /health 200 while the log is a symlink to another run's log, `--no-health` on a dead server's log,
and the log replaced by a directory mid-load. Real processes, real HTTP, real logs; none may end in ready.

Each wait stops at the line that decides it. Root's, where nothing runs, is "failed" once the process watch's
grace for a new launch is over (15 s, tui.core.find_grace.FIND_GRACE_S). Where only a timeout can be the
outcome, the deciding state comes within a few seconds (the 200 answered and judged, the port's owner and the
log's writer looked up, or the processes found unseeable), nothing after it can change the verdict (the same
server keeps giving the same answers; what another uid cannot see is unknown at any time, never a clock's
matter: tui.core.fold_sources.on_process), and the --timeout is a few seconds past it; the verdict names it
(tests.helpers.verdicts.wait_decided: a loaded machine that reaches it later gets a longer run).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.crossuid import CANNOT_SEE, SYSTEM_PYTHON
from tests.helpers.processes import Cli, Sims, Spawner
from tests.helpers.sim import wait_for_log, wait_ready
from tests.helpers.sshd import Sshd, free_port
from tests.helpers.verdicts import (
    LOOKALIKE,
    MODEL,
    Listener,
    Outcome,
    finished_log,
    follow_wait,
    paused,
    run_wait,
    wait_decided,
)
from tui.core.explain import PROCESS_EXITED
from tui.sim.params import MODEL as SIM_MODEL

NOT_READY = {"ready", "serving"}
EXITED_WORDS = "with no failure line in the log (a dead process, not a stall)"  # the processes, not the log, said it
UNVOUCHED = "the log has shown nothing since /health said 200"  # another uid: a finished log vouches for nothing
NOT_CONFIRMED = "not confirmed: /health is not probed (--no-health)"  # … and with --no-health nothing can confirm


def watcher(where: str, request: pytest.FixtureRequest) -> tuple[Sshd | None, str | None, Path]:
    """(sshd, remote python, a directory for the logs) for local, root over ssh, or another uid over ssh."""
    if where == "local":
        return None, None, request.getfixturevalue("tmp_path")
    if where == "ssh":
        return request.getfixturevalue("sshd"), None, request.getfixturevalue("tmp_path")
    return request.getfixturevalue("user_sshd"), SYSTEM_PYTHON, request.getfixturevalue("shared_dir")


def old_log(where: Path, port: int, name: str = "old.log", model: str = MODEL) -> Path:
    log = where / name
    log.write_text(finished_log(port, model=model))
    log.chmod(0o644)
    return log


@pytest.mark.parametrize("where", ["local", "ssh", "another_user"])
def test_a_lookalike_naming_the_logs_model_with_a_previous_runs_log_is_not_ready(
        where: str, cli: Cli, spawn: Spawner, request: pytest.FixtureRequest) -> None:  # fmt: skip
    """Decided once the 200 and /model_info are in and (as root) the port's owner and the log's writer were
    looked up: about 1 s locally, 5 s over ssh. 12 s is past that."""
    sshd, python, base = watcher(where, request)
    lookalike = Listener(spawn, base, LOOKALIKE, MODEL)
    log = old_log(base, lookalike.port)
    try:
        out = wait_decided(cli, sshd, "--log", str(log), "--port", str(lookalike.port), timeout=12,
                           decides=_decided(where), remote_python=python)  # fmt: skip
    finally:
        paths = lookalike.stop()
    assert "/health" in paths and "/model_info" in paths, paths  # asked, and it named the log's model
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr
    if where != "another_user":  # root sees that nothing writes the log and who listens
        assert f"something else answers on port {lookalike.port}: PID " in out.verdict(), out.verdict()
        assert "no process writes the log (a finished run's log?)" in out.verdict()
    else:  # it cannot see; a live SGLang would log the probe's request, this log stays as it was
        assert UNVOUCHED in out.verdict(), out.verdict()
        assert CANNOT_SEE in out.verdict()


def _decided(where: str) -> Callable[[Outcome], bool]:
    """What decides a finished run's log beside a live answer: root finds that nothing writes the log; another
    uid, that the log never grew after the 200."""
    return lambda out: out.says("no process writes the log") if where != "another_user" else out.says(UNVOUCHED)


@pytest.mark.parametrize("where", ["local", "another_user"])
def test_a_server_that_answers_200_then_dies_is_not_ready(where: str, cli: Cli, spawn: Spawner,
                                                          request: pytest.FixtureRequest) -> None:  # fmt: skip
    """Root: failed, once the grace for finding a new launch's processes is over. Another uid: decided within a
    second of the one 200 (that 200 unvouched by the old log, or /health refused after it): 8 s is past that."""
    sshd, python, base = watcher(where, request)
    flaky = Listener(spawn, base, LOOKALIKE, MODEL, "1")  # one /health 200, then it exits
    log = old_log(base, flaky.port)
    try:
        if where == "local":
            out = run_wait(cli, sshd, "--log", str(log), "--port", str(flaky.port), "--timeout", "25")
        else:
            out = wait_decided(cli, sshd, "--log", str(log), "--port", str(flaky.port), timeout=8,
                               decides=_ruled_out, remote_python=python)  # fmt: skip
    finally:
        paths = flaky.stop()
    assert "/health" in paths  # it answered one /health (200), then exited
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr
    if where == "local":
        verdict = out.verdict()
        assert out.code == 1 and verdict == f"sglang-tui wait: failed: {PROCESS_EXITED}, {EXITED_WORDS}", verdict
    else:
        assert out.code == 7 and _ruled_out(out), out.verdict()
        assert CANNOT_SEE in out.verdict()


def _ruled_out(out: Outcome) -> bool:
    """Whichever came first: /health refused after its death, or its one 200 unvouched (the old log never grows;
    the next /health, refused, comes 30 s after a 200)."""
    return out.says("(last: /health refused on port") or out.says(UNVOUCHED)


@pytest.mark.parametrize("where", ["local", "ssh", "another_user"])
def test_a_symlinked_log_of_another_run_with_a_live_server_on_the_port_is_not_ready(
        where: str, cli: Cli, sim: Sims, request: pytest.FixtureRequest) -> None:  # fmt: skip
    """Decided once the live simulator's 200 is judged against the old log (about 1 s locally, 3 s over ssh);
    12 s is past that."""
    sshd, python, base = watcher(where, request)
    server = sim(path=base / "run", speed=400.0, tp=2, shards=4)
    server.log.parent.chmod(0o755)
    old = old_log(base, server.port, model=SIM_MODEL)  # the same model: only the log's writer tells them apart
    link = base / "link.log"
    link.symlink_to(old)
    try:
        wait_ready(server)
        out = wait_decided(cli, sshd, "--log", str(link), "--port", str(server.port), "--sim-gpus",
                           str(server.gpu_state), timeout=12, decides=_decided(where), remote_python=python)  # fmt: skip
    finally:
        server.stop()
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr
    assert f"log path {link} is a symlink to {old}" in out.verdict(), out.verdict()
    if where != "another_user":
        assert "no process writes the log (a finished run's log?)" in out.verdict(), out.verdict()
    else:
        assert UNVOUCHED in out.verdict(), out.verdict()


@pytest.mark.parametrize("where", ["local", "another_user"])
def test_no_health_on_a_dead_servers_log_is_not_ready(where: str, cli: Cli, request: pytest.FixtureRequest) -> None:
    """Root: failed after the grace. Another uid: decided at once (no process can be seen: with --no-health
    nothing else may confirm the log); 8 s is past that."""
    sshd, python, base = watcher(where, request)
    port = free_port()
    log = old_log(base, port)
    if where == "local":
        out = run_wait(cli, sshd, "--log", str(log), "--port", str(port), "--no-health", "--timeout", "25")
    else:
        out = wait_decided(cli, sshd, "--log", str(log), "--port", str(port), "--no-health", timeout=8,
                           decides=lambda out: out.says(NOT_CONFIRMED), remote_python=python)  # fmt: skip
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr
    if where == "local":
        assert out.code == 1 and out.last_json()["error"] == {
            "kind": "other",
            "line": PROCESS_EXITED,
            "remedy": None,
        }, out.stderr
    else:
        assert out.code == 7 and NOT_CONFIRMED in out.verdict(), out.verdict()
        assert CANNOT_SEE in out.verdict()


@pytest.mark.parametrize("where", ["local", "another_user"])
def test_no_health_on_a_live_server_is_ready_only_where_its_process_is_seen(where: str, cli: Cli, sim: Sims,
                                                                           request: pytest.FixtureRequest) -> None:  # fmt: skip
    """The other side of the one above: --no-health rests on the log and a live process. Root sees it (ready,
    log only); another uid cannot, and nothing else may confirm it: not ready, and it says why. Decided once
    the log says fired up (about 1 s); 8 s is past that."""
    sshd, python, base = watcher(where, request)
    server = sim(path=base / "run", speed=400.0, tp=2, shards=4)
    server.log.parent.chmod(0o755)
    try:
        args = (
            "--log",
            str(server.log),
            "--port",
            str(server.port),
            "--sim-gpus",
            str(server.gpu_state),
            "--no-health",
        )
        if where == "local":
            out = run_wait(cli, sshd, *args, "--timeout", "60")
        else:
            out = wait_decided(cli, sshd, *args, timeout=8, decides=lambda out: out.says(NOT_CONFIRMED),
                               remote_python=python)  # fmt: skip
    finally:
        server.stop()
    if where == "local":
        assert out.code == 0, out.stderr
        assert out.verdict().startswith("sglang-tui wait: ready: the log says fired up (log only"), out.verdict()
    else:
        assert out.code == 7 and not out.phases() & NOT_READY, out.stderr  # timed out, never ready
        assert NOT_CONFIRMED in out.verdict(), out.verdict()
        assert CANNOT_SEE in out.verdict()


def test_log_replaced_by_a_directory_mid_load_is_named_and_followed(sim: Sims, cli: Cli) -> None:
    """The simulator paused from its load's first line until the wait names the change; a fast clock after."""
    server = sim(speed=100.0, tp=2, shards=8, extra=("--slow", "weights=3"))
    try:
        wait = follow_wait(cli, None, "--log", str(server.log), "--port", str(server.port), "--sim-gpus",
                           str(server.gpu_state), "--timeout", "90")  # fmt: skip
        wait_for_log(server, b"Load weight begin")
        with paused(server):  # tests.helpers.verdicts.paused
            wait.until(lambda state: state["phase"] == "loading_weights")
            os.unlink(server.log)
            server.log.mkdir()
            wait.until(lambda state: "following the server's stdout" in state["reason"])
        out = wait.finish()
    finally:
        server.stop()
        shutil.rmtree(server.log, ignore_errors=True)
    assert out.code == 0, out.stderr[-3000:]
    assert "log deleted; following the server's stdout (pid " in out.stderr, out.stderr[-3000:]
    final = out.last_json()
    assert final["phase"] == "ready" and final["shards"] == {"done": 8, "total": 8}


def test_a_lookalike_on_node0_with_previous_runs_logs_is_not_ready_for_a_multi_node_wait(tmp_path: Path, cli: Cli,
                                                                                        spawn: Spawner) -> None:  # fmt: skip
    """The same look-alike, watched as a 2-node deployment (`wait HOST:LOG HOST:LOG`): each member's first state
    carries what `wait HOST` sets (health probed, log tailed, processes watched), so node 0's old log vouches for
    nothing and the deployment is never ready. Decided, as for one host, within a second or two of node 0's 200;
    10 s is past that."""
    lookalike = Listener(spawn, tmp_path, LOOKALIKE, MODEL)
    log0 = old_log(tmp_path, lookalike.port, "node0.log")
    log1 = old_log(tmp_path, lookalike.port, "node1.log")
    try:
        out = wait_decided(
            cli,
            None,
            "--port",
            str(lookalike.port),
            timeout=10,
            hosts=(f"local:{log0}", f"local:{log1}"),
            decides=lambda out: _members(out.last_json()) == {"node0": "warmup", "node1": "warmup"},
        )
    finally:
        paths = lookalike.stop()
    assert "/health" in paths and "/model_info" in paths, paths  # node 0's /health was asked, answered 200, judged
    assert out.code == 7 and not out.phases() & NOT_READY, out.stderr[-2000:]  # timed out, never ready
    assert _members(out.last_json()) == {"node0": "warmup", "node1": "warmup"}  # both logs fired up, not confirmed
    assert not {m["phase"] for s in out.states() for m in s["members"]} & NOT_READY


def _members(state: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["phase"] for m in state["members"]}
