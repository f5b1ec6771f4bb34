"""`sglang-tui dump` end to end (issue 13): py-spy of every process of the simulator's hang-rank fault, through
LocalHost and a real sshd; py-spy missing, and ptrace refused by the kernel, each give one line and exit 1."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.processes import Sims
from tests.helpers.sim import ROOT, SimServer, wait_for_log
from tests.helpers.sshd import Sshd
from tui.sim.rank import NODUMP_ENV

VENV_PYTHON = str(Path(sys.executable).absolute())  # py-spy is installed next to it (the `test` extra)
NO_PTRACE = ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace"]  # root without CAP_SYS_PTRACE


def dump(
    target: list[str],
    sim: SimServer,
    *extra: str,
    env: dict[str, str] | None = None,
    prefix: list[str] | None = None,
    python: str = VENV_PYTHON,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(prefix or []), sys.executable, "-m", "tui", "dump", *target, "--port", str(sim.port), "--log", str(sim.log),
         "--remote-python", python, *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=90, env={**os.environ, **(env or {})},
    )  # fmt: skip


def until_odd(target: list[str], sim: SimServer, out: Path, limit: float = 60.0) -> dict[str, object]:
    """Dump until TP3 has reached its hang (the schedule takes a few seconds to get there)."""
    deadline = time.monotonic() + limit
    while True:
        proc = dump(target, sim, "--json", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        found = json.loads(proc.stdout)
        if found["odd"] or time.monotonic() > deadline:
            return found | {"_stderr": proc.stderr}
        time.sleep(1.0)


@pytest.fixture(scope="module")
def hung(module_sim: Sims) -> SimServer:
    if shutil.which("py-spy", path=str(Path(VENV_PYTHON).parent)) is None:
        pytest.fail("py-spy is not installed next to the test interpreter: pip install -e '.[test]'")
    sim = module_sim(fault="hang-rank", speed=20.0, tp=4, shards=4)
    wait_for_log(sim, b"Capturing batches", timeout=60)
    return sim


def _check(found: dict[str, object], sim: SimServer, out: Path) -> None:
    assert found["odd"] == ["TP3"], found
    assert found["groups"] == [["TP0", "TP1", "TP2"], ["TP3"]], found
    ranks = found["ranks"]
    assert isinstance(ranks, dict)
    assert {"TP0", "TP1", "TP2", "TP3", "main", "detokenizer"} <= set(ranks)
    assert ranks["main"]["pid"] == sim.pid
    assert ranks["TP3"]["frames"][0].startswith("Rank.all_reduce ")
    assert all(ranks[r]["frames"][0].startswith("Rank.barrier ") for r in ("TP0", "TP1", "TP2"))
    assert "TP3 is in all_reduce" in str(found["_stderr"]) and "TP0–2 are in barrier" in str(found["_stderr"])
    assert f"saved to {out}" in str(found["_stderr"])
    text = out.read_text()
    assert "TP3 is in all_reduce" in text and "Rank.all_reduce (tui/sim/rank.py:" in text


def test_dump_local_names_the_odd_rank(hung: SimServer, tmp_path: Path) -> None:
    out = tmp_path / "dump.txt"
    _check(until_odd(["local"], hung, out), hung, out)


def test_dump_over_sshd_names_the_odd_rank(hung: SimServer, sshd: Sshd, tmp_path: Path) -> None:
    out = tmp_path / "dump.txt"
    _check(until_odd(["127.0.0.1", *sshd.ssh_args()], hung, out), hung, out)


def server_env(tmp_path: Path, *, python: str, py_spy: Path | None = None, owner: int | None = None) -> Path:
    """A venv-like directory: DIR/bin/python (the test's interpreter under another name), and py-spy beside it
    when `py_spy` is given (a copy, owned by `owner` when given). Returns DIR/bin."""
    bindir = tmp_path / python / "bin"
    bindir.mkdir(parents=True)
    (bindir / "python").symlink_to(VENV_PYTHON)
    if py_spy is not None:
        shutil.copy2(py_spy, bindir / "py-spy")
        if owner is not None:
            os.chown(bindir / "py-spy", owner, owner)
    return bindir


def start_under(sims: Sims, tmp_path: Path, bindir: Path, argv0: str, **kw: object) -> SimServer:
    """The simulator run by DIR/bin/python as argv[0] (`absolute`: its path; `path`: `python`, found through the
    server's PATH, as in an activated venv); no VIRTUAL_ENV, no CONDA_PREFIX."""
    python = str(bindir / "python") if argv0 == "absolute" else "python"
    # start_sim runs sys.executable: this shell execs the other interpreter in its place (the pid stays the main's)
    prefix = ["sh", "-c", f'shift; exec {shlex.quote(python)} "$@"', "sh"]
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "VIRTUAL_ENV": "", "CONDA_PREFIX": ""}
    return sims(tmp_path / "sim", fault="hang-rank", speed=20.0, tp=2, shards=4, env=env, prefix=prefix, **kw)


def bare_python(tmp_path: Path) -> tuple[Path, str]:
    """--remote-python and a PATH with no py-spy anywhere (the tool's side of the search finds nothing)."""
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "python3").symlink_to(VENV_PYTHON)
    path = f"{bare}:/usr/bin:/bin"
    assert shutil.which("py-spy", path=path) is None
    return bare / "python3", path


@pytest.mark.parametrize("argv0", ["absolute", "path"])
def test_py_spy_is_found_next_to_the_servers_own_interpreter(tmp_path: Path, argv0: str, sim: Sims) -> None:
    """Issue 26 item 18: SGLang's venv has py-spy (a dependency of SGLang); --remote-python and PATH do not."""
    bindir = server_env(tmp_path, python="venv", py_spy=Path(VENV_PYTHON).parent / "py-spy")
    (tmp_path / "sim").mkdir()
    server = start_under(sim, tmp_path, bindir, argv0)
    python, path = bare_python(tmp_path)
    try:
        wait_for_log(server, b"Capturing batches", timeout=60)
        expected = str(bindir / "python") if argv0 == "absolute" else "python"
        assert Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")[0] == expected.encode()
        proc = dump(
            ["local"], server, "--json", "--out", str(tmp_path / "dump.txt"), env={"PATH": path}, python=str(python)
        )
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert {"TP0", "TP1", "main"} <= set(found["ranks"]) and found["ranks"]["main"]["pid"] == server.pid
    assert all(found["ranks"][r]["frames"] for r in ("TP0", "TP1"))


def test_py_spy_missing_is_one_line_naming_the_servers_interpreter(tmp_path: Path, sim: Sims) -> None:
    bindir = server_env(tmp_path, python="venv")  # no py-spy beside the server's interpreter either
    (tmp_path / "sim").mkdir()
    server = start_under(sim, tmp_path, bindir, "absolute")
    python, path = bare_python(tmp_path)
    try:
        wait_for_log(server, b"Capturing batches", timeout=60)
        proc = dump(["local"], server, "--json", env={"PATH": path}, python=str(python))
    finally:
        server.stop()
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert lines == [
        f"sglang-tui dump: py-spy is not installed on local (looked next to the server's {bindir}/python, next to "
        f"{python} and on PATH): install it there with `{bindir}/python -m pip install py-spy`"
    ]


def test_a_py_spy_of_another_user_beside_the_servers_interpreter_is_not_run(tmp_path: Path, sim: Sims) -> None:
    """The server's argv and environment choose where to look; they must not choose a program this user runs."""
    if os.geteuid() != 0:
        pytest.fail("giving a file to another uid needs root (chown)")
    bindir = server_env(tmp_path, python="venv", py_spy=Path(VENV_PYTHON).parent / "py-spy", owner=65534)
    (tmp_path / "sim").mkdir()
    server = start_under(sim, tmp_path, bindir, "absolute")
    python, path = bare_python(tmp_path)
    try:
        wait_for_log(server, b"Capturing batches", timeout=60)
        proc = dump(["local"], server, "--json", env={"PATH": path}, python=str(python))
    finally:
        server.stop()
    assert proc.returncode == 1 and proc.stdout == ""
    assert f"not running {bindir}/py-spy: it belongs to uid 65534, neither root nor this user" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_ptrace_refused_is_one_line(tmp_path: Path, sim: Sims) -> None:
    """The kernel refuses ptrace: ranks made non-dumpable, traced without CAP_SYS_PTRACE (as root: capability
    dropped with setpriv; as another user: without it already). The main process stays dumpable, so the
    server is still found by its port and its log."""
    root = os.geteuid() == 0
    if root and shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is needed to drop CAP_SYS_PTRACE as root")
    prefix = NO_PTRACE if root else []
    server = sim(tmp_path, fault="hang-rank", speed=20.0, tp=2, shards=4, env={NODUMP_ENV: "1"}, prefix=prefix)
    try:
        wait_for_log(server, b"Capturing batches", timeout=60)
        proc = dump(["local"], server, "--json", "--out", str(tmp_path / "dump.txt"), prefix=prefix)
    finally:
        server.stop()
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, lines
    assert "refused ptrace on TP0 (pid" in lines[0] and "TP1 (pid" in lines[0], lines
    assert "SYS_PTRACE" in lines[0] and "Traceback" not in proc.stderr


async def test_ranks_that_exit_during_the_dump_are_named_and_exit_1(tmp_path: Path, spawn) -> None:
    """Issue 26 item 13: TP1–3 of a TP=4 server exit between the scan and their py-spy (real processes, real
    py-spy): they were missing from the verdict, which read "all 1 ranks are in the same place", exit 0."""
    from tests.helpers.sshd import free_port
    from tui.commands.dump import outcome
    from tui.sources import pyspy
    from tui.sources.local import LocalHost
    from tui.sources.procwatch import ProcessWatch

    port, state = free_port(), tmp_path / "gpus"
    tree = ROOT / "tests" / "helpers" / "proctree.py"
    spawn([sys.executable, tree, "--port", str(port), "--gpu-state", state, "--tp", "4"], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while len(list(state.glob("proc-*.json"))) < 4:
        assert time.monotonic() < deadline, "the tree's four ranks never started"
        time.sleep(0.05)

    def gone(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        except OSError:
            return True

    class RanksExitAfterTheScan(ProcessWatch):
        """What the dump found, then TP1–3 die (SIGKILL) before py-spy reaches them."""

        async def server_processes(self) -> tuple[int | None, dict[int, str]]:
            main, procs = await super().server_processes()
            doomed = [pid for pid, title in procs.items() if title.split()[0][-3:] in ("TP1", "TP2", "TP3")]
            assert len(doomed) == 3, procs
            for pid in doomed:
                os.kill(pid, signal.SIGKILL)
            while not all(gone(pid) for pid in doomed):
                await asyncio.sleep(0.01)
            return main, procs

    host = LocalHost()
    await host.connect()
    try:
        result = await pyspy.dump(
            host, RanksExitAfterTheScan(host, port=port), remote_python=VENV_PYTHON, where="local"
        )
    finally:
        await host.close()
    assert result.error == "" and result.grouping is not None
    assert result.grouping.exited == ("TP1", "TP2", "TP3")
    assert result.grouping.summary.startswith("TP1–3 exited during the dump; TP0 is in rank_main (proctree.py:")
    printed, lines, code = outcome(result, None, json_out=True)
    assert code == 1 and lines == [result.grouping.summary] and printed is not None
    found = json.loads(printed)
    assert found["exited"] == ["TP1", "TP2", "TP3"] and found["groups"] == [["TP0"]]
    assert found["ranks"]["TP0"]["frames"][0].startswith("rank_main ")
