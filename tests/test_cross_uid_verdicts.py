"""Issue 17's eight cases as a non-root user watching root-owned servers and logs (tests/helpers/crossuid.py:
a real user, a real sshd logging it in; the servers, logs and test HTTP servers are root's). That user reads
/proc/PID/stat but not root's /proc/PID/fd: it cannot see which process writes the log or holds the port.
None may end in ready; what it cannot do by design (follow a rotated log through /proc/PID/fd) is named.

Only a timeout can be the verdict here (what cannot be seen is never "exited"). The state that decides each
comes within seconds (/health refused or hanging, a foreign answer judged, the log's path gone), and nothing
after it can turn it ready; the --timeout is a few seconds past it (tests.helpers.verdicts.wait_decided). The
waits on a server killed, or a log moved or deleted, under it run past the 15 s grace in which a visible
watch may not have found a new launch's processes yet (tui.core.find_grace.FIND_GRACE_S): they show that
an unseen server is not called exited after it either."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.helpers.crossuid import CANNOT_SEE, SYSTEM_PYTHON, tool, tool_args
from tests.helpers.processes import Cli, Sims, Spawner
from tests.helpers.sim import wait_for_log
from tests.helpers.sshd import Sshd, free_port
from tests.helpers.verdicts import (
    FOREIGN,
    SILENT,
    Followed,
    Listener,
    Outcome,
    finished_log,
    paused,
    replay_json,
    wait_decided,
)

NOT_READY = {"ready", "serving"}
PAST_THE_GRACE = "22"  # s: the grace for finding a new launch's processes (15 s) is over, and a watch's poll after it
SLOW_LOAD = ("--slow", "weights=50")  # at --speed 20, a shard per ~20 s: the load outlasts every wait here


def wait_as(cli: Cli, sshd: Sshd, *args: str, timeout: float, decides: Callable[[Outcome], bool]) -> Outcome:
    return wait_decided(cli, sshd, *args, timeout=timeout, decides=decides, remote_python=SYSTEM_PYTHON)


def old_log(where: Path, port: int, name: str = "old.log") -> Path:
    log = where / name
    log.write_text(finished_log(port))
    log.chmod(0o644)
    return log


# -------------------------------------------------------------------------- 1: a dead server's finished log


def test_a_finished_runs_log_as_another_user_is_never_ready(shared_dir: Path, user_sshd: Sshd, cli: Cli) -> None:
    """Decided at the first /health, refused (nothing listens: nothing can ever answer 200)."""
    port = free_port()
    out = wait_as(cli, user_sshd, "--log", str(old_log(shared_dir, port)), "--port", str(port), timeout=8,
                  decides=lambda out: out.says("up but not answering /health"))  # fmt: skip
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr
    assert "up but not answering /health" in out.verdict(), out.stderr
    assert "ready" not in out.verdict().split(": ", 1)[1].split(" ")[0]


# ------------------------------------------------------------------------- 2: a foreign 200 on the port


def test_a_foreign_200_as_another_user_is_never_ready(shared_dir: Path, user_sshd: Sshd, cli: Cli,
                                                      spawn: Spawner) -> None:  # fmt: skip
    """Decided once its 200 and /model_info are judged, within a second or two."""
    foreign = Listener(spawn, shared_dir, FOREIGN)
    empty = shared_dir / "empty.log"
    empty.write_bytes(b"")
    empty.chmod(0o644)
    cases = {"log empty": ("--log", str(empty)), "log missing": ("--log", str(shared_dir / "not-there.log")),
             "no log": ()}  # fmt: skip
    try:
        with ThreadPoolExecutor(len(cases)) as pool:
            futures = {name: pool.submit(wait_as, cli, user_sshd, *args, "--port", str(foreign.port), timeout=6,
                                         decides=lambda out: out.says("something else answers on port"))
                       for name, args in cases.items()}  # fmt: skip
            outcomes = {name: f.result() for name, f in futures.items()}
    finally:
        foreign.stop()
    for name, out in outcomes.items():
        assert out.code == 7 and not out.phases() & NOT_READY, (name, out.stderr)
        assert f"something else answers on port {foreign.port}" in out.verdict(), (name, out.stderr)


# --------------------------------------------------------------------------- 3: /health hanging after fired up


def test_a_hanging_health_as_another_user_is_not_ready(shared_dir: Path, user_sshd: Sshd, cli: Cli,
                                                       spawn: Spawner) -> None:  # fmt: skip
    """Decided when the first /health's 30 s read timeout runs out (health.HEALTH_READ_TIMEOUT_S)."""
    report = shared_dir / "in-flight.txt"
    silent = Listener(spawn, shared_dir, SILENT, str(report))
    try:
        out = wait_as(cli, user_sshd, "--log", str(old_log(shared_dir, silent.port)), "--port", str(silent.port),
                      timeout=35, decides=lambda out: out.says("up but not answering /health for", "timeout"))  # fmt: skip
    finally:
        silent.stop()
    assert out.code == 7 and not out.phases() & NOT_READY, out.stderr
    assert "up but not answering /health for" in out.verdict() and "1-token generation" in out.verdict()
    assert report.read_text().split()[:2] == ["max_in_flight", "1"]


# ------------------------------------------------------------------- 4: a server killed while it loads, unseen


def test_a_server_killed_mid_load_as_another_user_is_never_ready(shared_dir: Path, user_sshd: Sshd, cli: Cli,
                                                                 sim: Sims) -> None:  # fmt: skip
    server = sim(path=shared_dir / "run", speed=20, tp=2, shards=8, extra=SLOW_LOAD)
    try:
        wait_for_log(server, b"server_args")
        wait = Followed(cli.popen(*tool_args("wait", user_sshd, "--log", str(server.log), "--port", str(server.port),
                                             "--sim-gpus", str(server.gpu_state), "--timeout", PAST_THE_GRACE,
                                             "--json")))  # fmt: skip
        wait.until(lambda state: state["phase"] != "starting")
        server.stop()  # SIGKILL: no last line says why
        out = wait.finish()
    finally:
        server.stop()
    last = out.stderr.strip().splitlines()[-1]
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr[-2000:]
    assert "exited" not in last and CANNOT_SEE in last, last  # unseen: never "exited", and said why it cannot tell


# ------------------------------------------------------------- 5, 6: the log moved or deleted under the server


def wait_while(cli: Cli, sim: Sims, sshd: Sshd, where: Path, change: Callable[[Path], object]) -> tuple[Outcome, Path]:
    """`wait` as the user on a loading simulator, paused from its load's first line until the wait names the
    change made under it (`change`, to the log); a fast clock after."""
    server = sim(path=where / "run", speed=100.0, tp=2, shards=8, extra=("--slow", "weights=3"))
    try:
        wait = Followed(cli.popen(*tool_args("wait", sshd, "--log", str(server.log), "--port", str(server.port),
                                             "--sim-gpus", str(server.gpu_state), "--timeout", PAST_THE_GRACE,
                                             "--json")))  # fmt: skip
        wait_for_log(server, b"Load weight begin")
        with paused(server):  # from the load's first line until the wait names the change (verdicts.paused)
            wait.until(lambda state: state["phase"] == "loading_weights")
            change(server.log)
            wait.until(lambda state: "log file missing" in state["reason"])
        out = wait.finish(timeout=150)
        assert server.alive()
        return out, server.log
    finally:
        server.stop()


def test_mv_rotation_as_another_user_is_named_and_never_ready(shared_dir: Path, user_sshd: Sshd, cli: Cli,
                                                              sim: Sims) -> None:  # fmt: skip
    """The user cannot read the server's /proc/PID/fd, so it cannot follow LOG.1: it says so, never ready."""
    out, log = wait_while(cli, sim, user_sshd, shared_dir, lambda log: os.rename(log, f"{log}.1"))
    last = out.stderr.strip().splitlines()[-1]
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr[-3000:]
    assert f"log file missing: {log}" in last, last
    assert "exited" not in last and "failed" not in last


def test_log_deleted_mid_load_as_another_user_is_named_and_never_ready(shared_dir: Path, user_sshd: Sshd, cli: Cli,
                                                                       sim: Sims) -> None:  # fmt: skip
    out, log = wait_while(cli, sim, user_sshd, shared_dir, lambda log: os.unlink(log))
    last = out.stderr.strip().splitlines()[-1]
    assert out.code != 0 and not out.phases() & NOT_READY, out.stderr[-3000:]
    assert f"log file missing: {log}" in last, last
    assert "exited" not in last and "failed" not in last


# ------------------------------------------------------------------------ 7: a NUL-prefixed log, replay vs wait


def test_a_nul_prefixed_log_as_another_user_waits_like_the_plain_one(shared_dir: Path, user_sshd: Sshd,
                                                                     cli: Cli) -> None:  # fmt: skip
    """Each decided at its first /health, refused (nothing listens on the port)."""
    port = free_port()
    plain = old_log(shared_dir, port, "plain.log")
    nul = shared_dir / "cleared.log"
    nul.write_bytes(b"\x00" * 70_000 + plain.read_bytes())
    nul.chmod(0o644)
    assert replay_json(cli, nul) == replay_json(cli, plain)
    with ThreadPoolExecutor(2) as pool:
        a, b = (pool.submit(wait_as, cli, user_sshd, "--log", str(p), "--port", str(port), timeout=8,
                            decides=lambda out: out.says("up but not answering /health"))
                for p in (nul, plain))  # fmt: skip
        with_nul, without = a.result(), b.result()
    for out in (with_nul, without):
        assert out.code != 0 and not out.phases() & NOT_READY, out.stderr
    assert with_nul.code == without.code
    assert with_nul.last_json()["phase"] == without.last_json()["phase"]
    assert _facts(with_nul.verdict()) == _facts(without.verdict())


def _facts(verdict: str) -> str:
    """The verdict up to its first clock figure: "timed out after 7.6s in warmup: up but not answering /health"
    less the wait's own clock ("after 7.6s": the --timeout less the connection's time)."""
    return re.sub(r"timed out after \S+ ", "timed out ", verdict.split(" for ")[0])


# ------------------------------------------------------------------------------------ 8: stop, as another user


def test_stop_as_another_user_for_a_wrong_port_is_exit_3_and_leaves_the_server(shared_dir: Path, user_sshd: Sshd,
                                                                              cli: Cli, sim: Sims) -> None:  # fmt: skip
    server = sim(path=shared_dir / "run", speed=20, tp=2, shards=8)
    try:
        wait_for_log(server, b"server_args")
        wrong = free_port()
        run = tool(cli, "stop", user_sshd, "--port", str(wrong), "--sim-gpus", str(server.gpu_state), timeout=60)
        assert run.returncode == 6 and f"no server found on port {wrong}" in run.stderr, (run.stdout, run.stderr)
        missing = shared_dir / "typo.log"
        run = tool(cli, "stop", user_sshd, "--port", str(wrong), "--log", str(missing), timeout=60)
        assert run.returncode == 6 and f"no server found on port {wrong} / log {missing}" in run.stderr, run.stderr
        assert server.alive()
    finally:
        server.stop()


def test_stop_as_another_user_by_log_alone_exits_5(shared_dir: Path, user_sshd: Sshd, cli: Cli, sim: Sims) -> None:
    server = sim(path=shared_dir / "run", speed=20, tp=2, shards=8)
    try:
        wait_for_log(server, b"server_args")
        run = tool(cli, "stop", user_sshd, "--log", str(server.log), "--port", str(free_port()), timeout=60)
        assert run.returncode == 5 and CANNOT_SEE in run.stderr, (run.returncode, run.stdout, run.stderr)
        assert server.alive()
    finally:
        server.stop()
