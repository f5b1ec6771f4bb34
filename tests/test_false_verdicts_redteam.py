"""Issue 17, tried again as the red-team would (as root, locally and over a real sshd, and as another uid):
an SGLang look-alike naming the log's model while the log is a previous run's, a server that answers 200 and
then dies, a /health 200 while the log is a symlink to another run's log, `--no-health` on a dead server's log,
and the log replaced by a directory mid-load. Real processes, real HTTP, real logs; none may end in ready."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.crossuid import CANNOT_SEE, SYSTEM_PYTHON
from tests.helpers.sim import ROOT, start_sim, wait_ready
from tests.helpers.sshd import Sshd, free_port
from tests.helpers.verdicts import LOOKALIKE, MODEL, Listener, finished_log, run_wait
from tui.sim.params import MODEL as SIM_MODEL

NOT_READY = {"ready", "serving"}


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
        where: str, request: pytest.FixtureRequest) -> None:  # fmt: skip
    sshd, python, base = watcher(where, request)
    lookalike = Listener(base, LOOKALIKE, MODEL)
    log = old_log(base, lookalike.port)
    try:
        out = run_wait(sshd, "--log", str(log), "--port", str(lookalike.port), "--timeout", "25",
                       remote_python=python)  # fmt: skip
    finally:
        paths = lookalike.stop()
    assert "/health" in paths and "/model_info" in paths, paths  # asked, and it named the log's model
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr
    if where != "another_user":  # root sees that nothing writes the log and who listens
        assert f"something else answers on port {lookalike.port}: PID " in out.verdict(), out.verdict()
        assert "no process writes the log (a finished run's log?)" in out.verdict()
    else:  # it cannot see; a live SGLang would log the probe's request, this log stays as it was
        assert "the log has shown nothing since /health said 200" in out.verdict(), out.verdict()
        assert CANNOT_SEE in out.verdict()


@pytest.mark.parametrize("where", ["local", "another_user"])
def test_a_server_that_answers_200_then_dies_is_not_ready(where: str, request: pytest.FixtureRequest) -> None:
    sshd, python, base = watcher(where, request)
    flaky = Listener(base, LOOKALIKE, MODEL, "1")  # one /health 200, then it exits
    log = old_log(base, flaky.port)
    try:
        out = run_wait(sshd, "--log", str(log), "--port", str(flaky.port), "--timeout", "25", remote_python=python)
    finally:
        flaky.stop()
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr
    if where == "local":
        assert (
            out.verdict() == "sglang-tui wait: failed (other): server process exited (no process of the server is left)"
        )


@pytest.mark.parametrize("where", ["local", "ssh", "another_user"])
def test_a_symlinked_log_of_another_run_with_a_live_server_on_the_port_is_not_ready(
        where: str, request: pytest.FixtureRequest) -> None:  # fmt: skip
    sshd, python, base = watcher(where, request)
    sim = start_sim(base, speed=400.0, tp=2, shards=4)
    old = old_log(base, sim.port, model=SIM_MODEL)  # the same model: only the log's writer tells them apart
    link = base / "link.log"
    link.symlink_to(old)
    try:
        wait_ready(sim)
        out = run_wait(sshd, "--log", str(link), "--port", str(sim.port), "--sim-gpus", str(sim.gpu_state),
                       "--timeout", "25", remote_python=python)  # fmt: skip
    finally:
        sim.stop()
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr
    assert f"log path {link} is a symlink to {old}" in out.verdict(), out.verdict()
    if where != "another_user":
        assert "no process writes the log (a finished run's log?)" in out.verdict(), out.verdict()


@pytest.mark.parametrize("where", ["local", "another_user"])
def test_no_health_on_a_dead_servers_log_is_not_ready(where: str, request: pytest.FixtureRequest) -> None:
    sshd, python, base = watcher(where, request)
    port = free_port()
    out = run_wait(sshd, "--log", str(old_log(base, port)), "--port", str(port), "--timeout", "25", "--no-health",
                   remote_python=python)  # fmt: skip
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr


@pytest.mark.parametrize("where", ["local", "another_user"])
def test_no_health_on_a_live_server_is_ready_only_where_its_process_is_seen(where: str,
                                                                           request: pytest.FixtureRequest) -> None:  # fmt: skip
    """The other side of the one above: --no-health rests on the log and a live process. Root sees it (ready,
    log only); another uid cannot, and nothing else may confirm it: not ready, and it says why."""
    sshd, python, base = watcher(where, request)
    sim = start_sim(base, speed=400.0, tp=2, shards=4)
    try:
        out = run_wait(sshd, "--log", str(sim.log), "--port", str(sim.port), "--sim-gpus", str(sim.gpu_state),
                       "--timeout", "20" if where == "another_user" else "60", "--no-health",
                       remote_python=python)  # fmt: skip
    finally:
        sim.stop()
    if where == "local":
        assert out.code == 0, out.stderr
        assert out.verdict().startswith("sglang-tui wait: ready: the log says fired up (log only"), out.verdict()
    else:
        assert out.code == 2 and not out.phases() & NOT_READY, out.stderr
        assert "not confirmed: /health is not probed (--no-health)" in out.verdict(), out.verdict()
        assert CANNOT_SEE in out.verdict()


def test_log_replaced_by_a_directory_mid_load_is_named_and_followed(tmp_path: Path) -> None:
    sim = start_sim(tmp_path, speed=10.0, tp=2, shards=8)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "tui", "wait", "local", "--log", str(sim.log), "--port", str(sim.port), "--sim-gpus",
                                 str(sim.gpu_state), "--timeout", "90", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)  # fmt: skip
        assert proc.stdout is not None
        states = []
        for line in proc.stdout:
            states.append(json.loads(line))
            if states[-1]["phase"] == "loading_weights":
                os.unlink(sim.log)
                sim.log.mkdir()
                break
        out, err = proc.communicate(timeout=120)
        states += [json.loads(line) for line in out.splitlines() if line.strip()]
    finally:
        sim.stop()
        shutil.rmtree(sim.log, ignore_errors=True)
    assert proc.returncode == 0, err[-3000:]
    assert "log deleted; following the server's stdout (pid " in err, err[-3000:]
    assert states[-1]["phase"] == "ready" and states[-1]["shards"] == {"done": 8, "total": 8}


def test_a_lookalike_on_node0_with_previous_runs_logs_is_not_ready_for_a_multi_node_wait(tmp_path: Path) -> None:
    """The same look-alike, watched as a 2-node deployment (`wait HOST:LOG HOST:LOG`): each member's first state
    carries what `wait HOST` sets (health probed, log tailed, processes watched), so node 0's old log vouches for
    nothing and the deployment is never ready."""
    lookalike = Listener(tmp_path, LOOKALIKE, MODEL)
    log0 = old_log(tmp_path, lookalike.port, "node0.log")
    log1 = old_log(tmp_path, lookalike.port, "node1.log")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tui", "wait", f"local:{log0}", f"local:{log1}", "--port", str(lookalike.port),
             "--timeout", "20", "--json"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        paths = lookalike.stop()
    assert "/health" in paths, paths  # node 0's /health was asked, and answered 200
    phases = {json.loads(line)["phase"] for line in proc.stdout.splitlines() if line.strip()}
    assert proc.returncode != 0 and not phases & NOT_READY, proc.stderr[-2000:]
