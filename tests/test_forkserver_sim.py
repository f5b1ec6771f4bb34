"""SGLang's early forkserver (SGLANG_EARLY_FORKSERVER=1, reference §12) through `wait` and `stop`, against the
simulator's `--forkserver private|daemon`: the ranks are children of a forkserver, not of the launcher.

Real processes throughout: the simulator's launcher, its forkserver (a daemon in a session of its own, re-parented
away from the launcher, that outlives launches), the forked ranks, a bystander titled like a rank."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers.pids import alive
from tests.helpers.processes import Cli, PipeLines, Sims, Spawner
from tests.helpers.sim import RUN_MARKER, SimServer, wait_for_log
from tui.core.discovery import FoundServer
from tui.core.explain import MAIN_EXITED, RANK_EXITED
from tui.sim.forkserver import RECORD_ENV, start_ticks
from tui.sources.discover import discover
from tui.sources.local import LocalHost

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "tests" / "helpers" / "proctree.py"
SIM = ("--forkserver",)


def stat(pid: int) -> tuple[int, int]:
    """(ppid, sid) of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[3])


def children(parent: int) -> dict[int, str]:
    """pid -> command line of the live children of `parent`."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and alive(int(entry.name)):
            try:
                if stat(int(entry.name))[0] == parent:
                    found[int(entry.name)] = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
            except (OSError, IndexError):
                continue
    return found


def until(condition: Callable[[], object], timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.05)


def forked_ranks(daemon: int) -> dict[int, str]:
    return {pid: title for pid, title in children(daemon).items() if title.startswith("sglang::")}


@pytest.fixture
def record(tmp_path: Path) -> Iterator[Path]:
    """The daemon forkserver's record file (SGLANG_FORKSERVER_FILE), in the test's own directory; the daemon it
    names is killed at teardown (pid and start time checked), whatever the test did."""
    path = tmp_path / "forkserver" / "sglang_forkserver.json"
    yield path
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if start_ticks(int(data["pid"])) == int(data["start"]):
        os.kill(int(data["pid"]), signal.SIGKILL)


def daemon_of(record: Path) -> int:
    until(record.exists, 30, f"the daemon's record {record}")
    return int(json.loads(record.read_text())["pid"])


def start(sim: Sims, where: Path, mode: str, record: Path | None = None, **kw: object) -> SimServer:
    env = {RECORD_ENV: str(record)} if record is not None else None
    extra = (*SIM, mode, *kw.pop("extra", ()))  # type: ignore[misc]
    # a load of a few real seconds (weights 5x slower than the rest), so a test can hold it mid-load
    return sim(where, tp=2, shards=4, speed=100.0, speculative="none", env=env, extra=(*extra, "--slow", "weights=5"),
               **kw)  # fmt: skip


@contextmanager
def held(pids: list[int]) -> Iterator[None]:
    """These processes stopped (SIGSTOP), continued after: the simulator's schedule stands still meanwhile
    (tui.sim.rank), so a watch surely sees the launch mid-load, however slow the host is."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def target(server: SimServer) -> list[str]:
    return ["local", "--port", str(server.port), "--log", str(server.log), "--sim-gpus", str(server.gpu_state)]


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def wait_ready_with_ranks(cli: Cli, server: SimServer, forkserver: Callable[[], int]) -> tuple[dict, dict[int, str]]:
    """`wait --json` to ready; mid-load (launcher and ranks held) it maps TP0 and TP1 to the forked schedulers and
    their GPUs, which needs the process watch to have found them (the mapping takes only the server's own pids,
    so the bystander, also titled sglang::scheduler_TP0 on GPU 0, is no candidate). Returns the last state and
    the forkserver's children."""
    watch = cli.popen("wait", *target(server), "--json", "--no-history", "--remote-python", sys.executable)
    assert watch.stdout is not None
    lines = PipeLines(watch.stdout)
    until(lambda: wait_for_log(server, b"Load weight begin").count(b"Load weight begin") >= 2, 60, "both loads")
    ranks = forked_ranks(forkserver())
    schedulers = {title.removeprefix("sglang::scheduler_"): pid for pid, title in ranks.items() if "TP" in title}

    def found(line: str) -> bool:
        state = json_lines(line)
        return bool(state) and {name: (rank["pid"], rank["gpu_index"]) for name, rank in state[0]["ranks"].items()} == {
            "TP0": (schedulers["TP0"], 0),
            "TP1": (schedulers["TP1"], 1),
        }

    with held([server.pid, *ranks]):
        lines.wait_for(found, timeout=90)
    assert watch.wait(120) == 0, lines.text(1)
    last = json_lines(lines.text(1))[-1]
    assert last["phase"] == "ready" and found(json.dumps(last)), last
    return last, ranks


def wait_ready(cli: Cli, server: SimServer) -> dict:
    run = cli("wait", *target(server), "--json", "--no-history", "--remote-python", sys.executable, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def stop(cli: Cli, server: SimServer) -> subprocess.CompletedProcess[str]:
    return cli("stop", *target(server), "--grace", "5", "--remote-python", sys.executable, timeout=120)


def test_daemon_ranks_found_stopped_and_the_daemon_and_a_bystander_left(
    tmp_path: Path, sim: Sims, cli: Cli, spawn: Spawner, record: Path
) -> None:
    """`wait` maps each rank to its forked process and GPU (the process watch found them: the GPU mapping takes
    only the server's own processes); `stop` leaves no rank, the daemon forkserver and a bystander alive (one
    titled sglang::scheduler_TP0 that even writes the same log, started before the launch); a second launch
    reuses the daemon, whose children carry the FIRST launch's run marker (a fork keeps its forkserver's
    environment), and is found and stopped all the same."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    with open(first / "sim.log", "ab") as log:  # an SGLang-titled process of nobody's launch, writing the log
        bystander = spawn([sys.executable, TREE, "bystander", "--gpu-state", first / "gpus"], stdout=log)
    until(lambda: (first / "gpus" / f"proc-{bystander.pid}.json").exists(), 30, "the bystander's GPU memory")
    server = start(sim, first, "daemon", record)
    daemon = daemon_of(record)
    assert stat(daemon)[1] == daemon != server.pid and stat(daemon)[0] != server.pid  # detached, not the launcher's

    _, ranks = wait_ready_with_ranks(cli, server, lambda: daemon)
    assert sorted(ranks.values()) == ["sglang::detokenizer", "sglang::scheduler_TP0", "sglang::scheduler_TP1"]

    run = stop(cli, server)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "GPU memory released" in run.stdout
    assert [pid for pid in ranks if alive(pid)] == [] and not server.alive()
    assert alive(daemon) and alive(bystander.pid)

    again = start(sim, second, "daemon", record)
    wait_ready(cli, again)
    reused = forked_ranks(daemon)
    assert len(reused) == 3 and not set(reused) & set(ranks)
    assert daemon_of(record) == daemon and b"unusable" not in again.log.read_bytes()
    marker = f"{RUN_MARKER}={server.run_id}".encode()
    assert all(marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") for pid in reused)
    run = stop(cli, again)
    assert run.returncode == 0, run.stdout + run.stderr
    assert [pid for pid in reused if alive(pid)] == [] and alive(daemon) and alive(bystander.pid)


def test_private_forkserver_stop_leaves_nothing(tmp_path: Path, sim: Sims, cli: Cli) -> None:
    """A private forkserver is the launcher's child: it and the ranks it forked are the server's, all stopped."""
    server = start(sim, tmp_path / "private", "private")

    def forkserver() -> int:
        (pid,) = [pid for pid, title in children(server.pid).items() if title == "sglang::forkserver"]
        return pid

    _, ranks = wait_ready_with_ranks(cli, server, forkserver)
    assert sorted(ranks.values()) == ["sglang::detokenizer", "sglang::scheduler_TP0", "sglang::scheduler_TP1"]
    forkserver_pid = forkserver()
    run = stop(cli, server)
    assert run.returncode == 0, run.stdout + run.stderr
    assert [pid for pid in [server.pid, forkserver_pid, *ranks] if alive(pid)] == []


def test_launcher_killed_ranks_exit_by_themselves_and_the_verdict_names_the_launcher(
    tmp_path: Path, sim: Sims, cli: Cli, record: Path
) -> None:
    """The launcher SIGKILLed while its forked ranks hang in loading: the verdict says the main process exited,
    not that a rank did, and the ranks then leave by themselves (`[early_forkserver] … is gone; exiting`). The
    ranks are held stopped (SIGSTOP) across the kill, so the watch surely sees the moment when only they live
    (they exit about a second after the launcher; a check every 2 s may land on either side)."""
    server = start(sim, tmp_path / "killed", "daemon", record, fault="hang-weights")
    daemon = daemon_of(record)
    watch = cli.popen("wait", *target(server), "--json", "--no-history", "--remote-python", sys.executable)
    assert watch.stdout is not None
    lines = PipeLines(watch.stdout)

    def mapped(line: str) -> bool:
        states = json_lines(line)
        ranks = states[0]["ranks"] if states else {}
        return len(ranks) == 2 and all(rank.get("pid") for rank in ranks.values())

    lines.wait_for(mapped, timeout=90)  # the watch found the forked ranks (the GPU mapping is theirs)
    ranks = forked_ranks(daemon)
    assert len(ranks) == 3
    for pid in ranks:
        os.kill(pid, signal.SIGSTOP)
    os.kill(server.pid, signal.SIGKILL)
    assert server.wait(10) == -signal.SIGKILL
    assert watch.wait(60) == 1, lines.text(1)
    last = json_lines(lines.text(1))[-1]
    assert last["phase"] == "failed"
    assert f"{MAIN_EXITED} (pid {server.pid}) exited" in last["reason"] and RANK_EXITED not in last["reason"]
    for pid in ranks:
        os.kill(pid, signal.SIGCONT)
    until(lambda: not any(alive(pid) for pid in ranks), 30, "the forked ranks leave by themselves")
    for pid in ranks:
        wait_for_log(server, f"[early_forkserver] pid {pid}: launching process {server.pid} is gone; exiting".encode())
    assert alive(daemon)


def test_discovery_finds_a_daemon_forkservers_server_by_its_launcher(tmp_path: Path, sim: Sims, record: Path) -> None:
    """With no port and no log: the ranks' untitled ancestor is no launcher (the daemon forkserver, titled, under
    init), so the launcher is the process that writes the ranks' stderr file; never the daemon."""
    server = start(sim, tmp_path / "found", "daemon", record, fault="hang-weights")
    until(lambda: len(forked_ranks(daemon_of(record))) == 3, 60, "the forked ranks")

    async def go() -> list[FoundServer]:
        host = LocalHost()
        await host.connect()
        try:
            return await discover(host)
        finally:
            await host.close()

    found = [s for s in asyncio.run(go()) if s.log == str(server.log)]  # other servers may run on this machine
    assert [(s.pid, s.port) for s in found] == [(server.pid, server.port)]


def test_an_unusable_daemon_gives_sglangs_line_and_a_private_forkserver(
    tmp_path: Path, sim: Sims, cli: Cli, record: Path
) -> None:
    """A record whose daemon is gone: SGLang's `[early_forkserver] daemon at PATH unusable (WHY); starting a private
    one`, the ranks forked by the launcher's own forkserver, and the record left as it was (nothing to kill)."""
    record.parent.mkdir(parents=True)
    stale = json.dumps({"pid": 2**22 + 1, "start": 1, "socket": "@sglang-gone"})  # above pid_max: never a process
    record.write_text(stale)
    server = start(sim, tmp_path / "stale", "daemon", record)
    wait_for_log(server, f"[early_forkserver] daemon at {record} unusable (pid {2**22 + 1} is gone); ".encode())
    wait_ready(cli, server)
    (forkserver,) = [pid for pid, title in children(server.pid).items() if title == "sglang::forkserver"]
    assert len(forked_ranks(forkserver)) == 3 and record.read_text() == stale
    run = stop(cli, server)
    assert run.returncode == 0, run.stdout + run.stderr
    assert not alive(forkserver) and not server.alive()
