"""Attaching to a startup already running (issue 21): the log's clock is the clock. On the real simulator, through
`wait --json` and the Session that `wait` and the TUI fold with, locally and over a real sshd.

The simulator prints real time (tui/sim/clock.py: its schedule runs `--speed` times faster, its log stamps and
tqdm times do not), so time in its log is the host's real clock, as on a real server: the quiet time, the stall
budget and the time in phase are checked against the log's own stamps and its mtime. The hang is 40 s old
without waiting 40 s: `simulate --backdate 40` writes its stamps and the log's mtime 40 s back, a launch begun
40 s earlier."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Sims, Spawner, read_rest
from tests.helpers.sim import SimServer, wait_for_log
from tests.helpers.sshd import Sshd, ssh_host
from tui.core.state import Phase
from tui.core.wording import verdict_line
from tui.sources.host import Host
from tui.sources.local import LocalHost
from tui.sources.monitor import Monitor
from tui.sources.session import Session

HANG_S = 40.0  # the hang in weights the watch attaches after
STAMP = re.compile(rb"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})[^\]]*\] .*CUDA graph begin", re.M | re.I)


def epoch(stamp: str) -> float:
    """A log stamp (the host's local time, as the simulator prints it) as the host's epoch."""
    return time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S"))


def settled(log: Path, quiet: float = 2.0, timeout: float = 60.0) -> float:
    """Until the log has not grown for `quiet` s (the hang); returns its mtime then."""
    deadline = time.monotonic() + timeout
    size, since = -1, time.monotonic()
    while time.monotonic() - since < quiet:
        assert time.monotonic() < deadline, "the simulator's log never stopped growing"
        now_size = log.stat().st_size
        if now_size != size:
            size, since = now_size, time.monotonic()
        time.sleep(0.1)
    return log.stat().st_mtime


@pytest.fixture(scope="module")
def hung(module_sim: Sims) -> SimServer:
    """A TP=2 load hung at shard 5/16 (`--fault hang-weights`), its log silent for HANG_S seconds of the host's
    clock (begun HANG_S s earlier: the last write's mtime is that old once the hang settles)."""
    sim = module_sim(fault="hang-weights", speed=20.0, tp=2, shards=16, extra=("--backdate", str(HANG_S)))
    wait_for_log(sim, b"loading shards", 60)
    mtime = settled(sim.log)
    assert b"/16 [" in sim.log.read_bytes()[-4000:] and sim.alive()
    assert time.time() - mtime >= HANG_S  # the premise: the log was last written HANG_S s ago
    return sim


def wait_args(sshd: Sshd | None, sim: SimServer, *extra: str) -> list[str]:
    target = ["127.0.0.1", *sshd.ssh_args()] if sshd is not None else ["local"]
    return ["wait", *target, "--log", str(sim.log), "--port", str(sim.port), "--sim-gpus", str(sim.gpu_state),
            "--json", "--timeout", "60", *extra]  # fmt: skip


def first_attached(proc: subprocess.Popen[str]) -> dict:
    """The first JSON line that shows the log (what came before it is the connection, with no log read yet)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        obj = json.loads(line)
        if obj["phase"] != "starting":
            return obj
    raise AssertionError(f"wait ended before the log was read: {proc.wait()}")


def log_stamp_near(text: str | None, mtime: float) -> bool:
    """A log timestamp ("2026-12-01 20:18:30") within 2 s of the host's mtime."""
    return text is not None and abs(epoch(text) - mtime) <= 2.0


@pytest.mark.parametrize("via", ["local", "ssh"])
def test_attach_after_a_hang_counts_the_quiet_time_from_the_log(
    via: str, hung: SimServer, cli: Cli, request: pytest.FixtureRequest
) -> None:
    sshd = request.getfixturevalue("sshd") if via == "ssh" else None
    mtime = hung.log.stat().st_mtime
    first = first_attached(cli.popen(*wait_args(sshd, hung)))  # the rest of its run is not the test's
    # where the log's last shard frame stands (tqdm's last frame has no terminator yet: the parser may hold it)
    last = int(re.findall(rb"\| (\d+)/16 \[", hung.log.read_bytes())[-1])
    assert first["phase"] == "loading_weights" and first["shards"]["total"] == 16
    assert last - 1 <= first["shards"]["done"] <= last
    stall = first["stall"]
    assert stall["quiet_s"] >= HANG_S - 5, stall  # counted from the log's last write, not from the attach
    assert stall["budget_s"] == 180.0 and stall["quiet_s"] < stall["budget_s"]  # not stalled: within its budget
    assert log_stamp_near(stall["last_progress_at"], mtime), (stall, time.strftime("%F %T", time.localtime(mtime)))
    # no ETA from a burst of old frames: the 6 frames happened 40 s ago, at their own pace
    assert first["eta"]["ready_in_s"] is None and first["eta"]["phase_left_s"] is None
    reason = first["reason"]
    assert "ETA" not in reason and "shards/s" not in reason and "no progress for" in reason, reason
    said = re.search(r"no progress for (\d+) s", reason)  # one figure: the words' silence is the quiet time's
    assert said is not None and abs(int(said.group(1)) - stall["quiet_s"]) <= 1, (reason, stall)


@pytest.mark.parametrize("via", ["local", "ssh"])
def test_attach_after_a_hang_past_its_budget_is_stalled_at_once(
    via: str, hung: SimServer, cli: Cli, request: pytest.FixtureRequest
) -> None:
    """Past its budget from the first look at the log: the verdict waits only for the process watch to say the
    server lives (a dead server's old log is failed, not stalled: test_a_dead_servers_old_log_is_failed_not_stalled)."""
    sshd = request.getfixturevalue("sshd") if via == "ssh" else None
    proc = cli.popen(*wait_args(sshd, hung, "--stall-after", "30"))
    first = first_attached(proc)
    out, err = read_rest(proc, 60)
    assert proc.returncode == 3, err[-2000:]  # stalled
    # the first line that shows the log is already past the budget: its quiet time came from the log
    assert first["stall"]["budget_s"] == 30.0 and first["stall"]["quiet_s"] >= HANG_S - 5, first["stall"]
    final = json.loads(out.splitlines()[-1]) if out.strip() else first
    assert final["reason"].startswith("stalled in loading weights: no progress on any signal"), final["reason"]
    assert final["phase"] == "loading_weights" and final["stall"]["quiet_s"] >= HANG_S - 5
    assert "stalled in loading weights" in err.strip().splitlines()[-1]


def test_a_dead_servers_old_log_is_failed_not_stalled(sim: Sims, cli: Cli, tmp_path: Path) -> None:
    """A log last written 40 s ago past every budget, whose server was SIGKILLed: no process of it is found, so
    it is failed once the find's grace is over, never stalled on the quiet time the log gives at once."""
    server = sim(path=tmp_path / "dead", fault="hang-weights", speed=20.0, tp=2, shards=16,
                 extra=("--backdate", str(HANG_S)))  # fmt: skip
    wait_for_log(server, b"loading shards", 60)
    settled(server.log)
    server.stop()  # SIGKILL: no line says it
    out = cli(*wait_args(None, server, "--stall-after", "5"))
    assert out.returncode == 1, out.stderr[-2000:]  # failed, not 3
    final = json.loads(out.stdout.splitlines()[-1])
    assert final["phase"] == "failed" and "no process of the server is left" in final["reason"], final["reason"]
    assert all(not json.loads(line)["reason"].startswith("stalled") for line in out.stdout.splitlines())


async def attach_in_capture(host: Host, sim: SimServer) -> tuple[float, float]:
    """Fold the Session `wait` folds with until its state is in capture: (phase_since, the fold's clock)."""
    await host.connect()
    monitor = Monitor(host, log_path=str(sim.log), port=sim.port, remote_python=sys.executable,
                      sim_gpus=str(sim.gpu_state))  # fmt: skip
    session = Session(monitor)

    async def fold() -> tuple[float, float]:
        async for state, now in session.states():
            if state.phase is Phase.CUDA_GRAPH:
                return state.phase_since, now
            assert state.phase not in (Phase.WARMUP, Phase.READY, Phase.FAILED), verdict_line(state)
        raise AssertionError("no state in capture")

    try:
        return await asyncio.wait_for(fold(), 60)
    finally:
        await session.close()
        await host.close()


@pytest.mark.parametrize("via", ["local", "ssh"])
def test_attach_mid_capture_counts_the_time_in_phase_from_the_log(
    via: str, sim: Sims, spawn: Spawner, request: pytest.FixtureRequest
) -> None:
    # capture slowed to ~40 s of real time (the rest fast); attached ~6 s into it, while it runs (an attach's own
    # clock would say ~0 s). `spawn`: the Session's LocalHost starts its commands in this process.
    server = sim(speed=50.0, tp=2, shards=8, extra=("--slow", "cuda_graph=50"))
    found = STAMP.search(wait_for_log(server, b"CUDA graph begin", 60))
    assert found is not None
    began = epoch(found.group(1).decode())  # the log's own phase-start line, as the host's epoch
    while time.time() - began < 6:
        time.sleep(0.1)
    host: Host = LocalHost() if via == "local" else ssh_host(request.getfixturevalue("sshd"))
    since, now = asyncio.run(attach_in_capture(host, server))
    log_in_phase = server.log.stat().st_mtime - began  # the log's last write against its phase-start line
    assert log_in_phase >= 5.0
    assert abs(since - began) <= 2.0  # the phase began when the log says (its stamp is whole seconds)
    assert abs((now - since) - log_in_phase) <= 2.0, (now - since, log_in_phase)
