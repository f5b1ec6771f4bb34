"""Issue 17's eight cases as a non-root user watching root-owned servers and logs (tests/helpers/crossuid.py:
a real user, a real sshd logging it in; the servers, logs and test HTTP servers are root's). That user reads
/proc/PID/stat but not root's /proc/PID/fd: it cannot see which process writes the log or holds the port.
None may end in ready; what it cannot do by design (follow a rotated log through /proc/PID/fd) is named."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.helpers.crossuid import CANNOT_SEE, SYSTEM_PYTHON, tool, tool_argv
from tests.helpers.sim import ROOT, start_sim, wait_for_log
from tests.helpers.sshd import Sshd, free_port
from tests.helpers.verdicts import FOREIGN, SILENT, Listener, Outcome, finished_log, replay_json, run_wait

NOT_READY = {"ready", "serving"}


def wait_as(sshd: Sshd, *args: str, timeout: float = 150) -> Outcome:
    return run_wait(sshd, *args, timeout=timeout, remote_python=SYSTEM_PYTHON)


def old_log(where: Path, port: int, name: str = "old.log") -> Path:
    log = where / name
    log.write_text(finished_log(port))
    log.chmod(0o644)
    return log


# -------------------------------------------------------------------------- 1: a dead server's finished log


def test_a_finished_runs_log_as_another_user_is_never_ready(shared_dir: Path, user_sshd: Sshd) -> None:
    port = free_port()
    out = wait_as(user_sshd, "--log", str(old_log(shared_dir, port)), "--port", str(port), "--timeout", "25")
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr
    assert "up but not answering /health" in out.verdict(), out.stderr
    assert "ready" not in out.verdict().split(": ", 1)[1].split(" ")[0]


# ------------------------------------------------------------------------- 2: a foreign 200 on the port


def test_a_foreign_200_as_another_user_is_never_ready(shared_dir: Path, user_sshd: Sshd) -> None:
    foreign = Listener(shared_dir, FOREIGN)
    empty = shared_dir / "empty.log"
    empty.write_bytes(b"")
    empty.chmod(0o644)
    cases = {"log empty": ("--log", str(empty)), "log missing": ("--log", str(shared_dir / "not-there.log")),
             "no log": ()}  # fmt: skip
    try:
        with ThreadPoolExecutor(len(cases)) as pool:
            futures = {name: pool.submit(wait_as, user_sshd, *args, "--port", str(foreign.port), "--timeout", "8")
                       for name, args in cases.items()}  # fmt: skip
            outcomes = {name: f.result() for name, f in futures.items()}
    finally:
        foreign.stop()
    for name, out in outcomes.items():
        assert out.code == 2 and not out.phases() & NOT_READY, (name, out.stderr)
        assert f"something else answers on port {foreign.port}" in out.verdict(), (name, out.stderr)


# --------------------------------------------------------------------------- 3: /health hanging after fired up


def test_a_hanging_health_as_another_user_is_not_ready(shared_dir: Path, user_sshd: Sshd) -> None:
    report = shared_dir / "in-flight.txt"
    silent = Listener(shared_dir, SILENT, str(report))
    try:
        out = wait_as(user_sshd, "--log", str(old_log(shared_dir, silent.port)), "--port", str(silent.port),
                      "--timeout", "40")  # fmt: skip
    finally:
        silent.stop()
    assert out.code == 2 and not out.phases() & NOT_READY, out.stderr
    assert "up but not answering /health for" in out.verdict() and "1-token generation" in out.verdict()
    assert report.read_text().split()[:2] == ["max_in_flight", "1"]


# ------------------------------------------------------------------- 4: a server killed while it loads, unseen


def test_a_server_killed_mid_load_as_another_user_is_never_ready(shared_dir: Path, user_sshd: Sshd) -> None:
    sim = start_sim(shared_dir, speed=1, tp=2, shards=8)
    try:
        wait_for_log(sim, b"server_args")
        proc = subprocess.Popen(tool_argv("wait", user_sshd, "--log", str(sim.log), "--port", str(sim.port),
                                          "--sim-gpus", str(sim.gpu_state), "--timeout", "25", "--json"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)  # fmt: skip
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{") and json.loads(line)["phase"] != "starting":
                break
        sim.stop()  # SIGKILL: no last line says why
        out, err = proc.communicate(timeout=120)
    finally:
        sim.stop()
    phases = {json.loads(line)["phase"] for line in out.splitlines() if line.startswith("{")}
    last = err.strip().splitlines()[-1]
    assert proc.returncode != 0 and not phases & NOT_READY, err[-2000:]
    assert "exited" not in last and CANNOT_SEE in last, last  # unseen: never "exited", and said why it cannot tell


# ------------------------------------------------------------- 5, 6: the log moved or deleted under the server


def wait_while(sshd: Sshd, where: Path, change: Callable[[Path], object]) -> tuple[int, str, list[dict]]:
    sim = start_sim(where, speed=10.0, tp=2, shards=8)
    try:
        proc = subprocess.Popen(tool_argv("wait", sshd, "--log", str(sim.log), "--port", str(sim.port),
                                          "--sim-gpus", str(sim.gpu_state), "--timeout", "40", "--json"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)  # fmt: skip
        assert proc.stdout is not None
        states = []
        for line in proc.stdout:
            states.append(json.loads(line))
            if states[-1]["phase"] == "loading_weights":
                change(sim.log)
                break
        out, err = proc.communicate(timeout=150)
        states += [json.loads(line) for line in out.splitlines() if line.strip()]
        assert sim.alive()
        return proc.returncode, err, states
    finally:
        sim.stop()


def test_mv_rotation_as_another_user_is_named_and_never_ready(shared_dir: Path, user_sshd: Sshd) -> None:
    """The user cannot read the server's /proc/PID/fd, so it cannot follow LOG.1: it says so, never ready."""
    code, err, states = wait_while(user_sshd, shared_dir, lambda log: os.rename(log, f"{log}.1"))
    last = err.strip().splitlines()[-1]
    assert code != 0 and not {s["phase"] for s in states} & NOT_READY, err[-3000:]
    assert f"log file missing: {shared_dir / 'sim.log'}" in last, last
    assert "exited" not in last and "failed" not in last


def test_log_deleted_mid_load_as_another_user_is_named_and_never_ready(shared_dir: Path, user_sshd: Sshd) -> None:
    code, err, states = wait_while(user_sshd, shared_dir, lambda log: os.unlink(log))
    last = err.strip().splitlines()[-1]
    assert code != 0 and not {s["phase"] for s in states} & NOT_READY, err[-3000:]
    assert f"log file missing: {shared_dir / 'sim.log'}" in last, last
    assert "exited" not in last and "failed" not in last


# ------------------------------------------------------------------------ 7: a NUL-prefixed log, replay vs wait


def test_a_nul_prefixed_log_as_another_user_waits_like_the_plain_one(shared_dir: Path, user_sshd: Sshd) -> None:
    port = free_port()
    plain = old_log(shared_dir, port, "plain.log")
    nul = shared_dir / "cleared.log"
    nul.write_bytes(b"\x00" * 70_000 + plain.read_bytes())
    nul.chmod(0o644)
    assert replay_json(nul) == replay_json(plain)
    with ThreadPoolExecutor(2) as pool:
        a, b = (pool.submit(wait_as, user_sshd, "--log", str(p), "--port", str(port), "--timeout", "20")
                for p in (nul, plain))  # fmt: skip
        with_nul, without = a.result(), b.result()
    for out in (with_nul, without):
        assert out.code != 0 and not out.phases() & NOT_READY, out.stderr
    assert with_nul.code == without.code
    assert with_nul.last_json()["phase"] == without.last_json()["phase"]
    assert with_nul.verdict().split(" for ")[0] == without.verdict().split(" for ")[0]


# ------------------------------------------------------------------------------------ 8: stop, as another user


def test_stop_as_another_user_for_a_wrong_port_is_exit_3_and_leaves_the_server(shared_dir: Path,
                                                                              user_sshd: Sshd) -> None:  # fmt: skip
    sim = start_sim(shared_dir, speed=20, tp=2, shards=8)
    try:
        wait_for_log(sim, b"server_args")
        wrong = free_port()
        run = tool("stop", user_sshd, "--port", str(wrong), "--sim-gpus", str(sim.gpu_state), timeout=60)
        assert run.returncode == 3 and f"no server found on port {wrong}" in run.stderr, (run.stdout, run.stderr)
        missing = shared_dir / "typo.log"
        run = tool("stop", user_sshd, "--port", str(wrong), "--log", str(missing), timeout=60)
        assert run.returncode == 3 and f"no server found on port {wrong} / log {missing}" in run.stderr, run.stderr
        assert sim.alive()
    finally:
        sim.stop()


def test_stop_as_another_user_by_log_alone_exits_5(shared_dir: Path, user_sshd: Sshd) -> None:
    sim = start_sim(shared_dir, speed=20, tp=2, shards=8)
    try:
        wait_for_log(sim, b"server_args")
        run = tool("stop", user_sshd, "--log", str(sim.log), "--port", str(free_port()), timeout=60)
        assert run.returncode == 5 and CANNOT_SEE in run.stderr, (run.returncode, run.stdout, run.stderr)
        assert sim.alive()
    finally:
        sim.stop()
