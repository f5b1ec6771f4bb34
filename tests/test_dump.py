"""`sglang-tui dump` end to end (issue 13): py-spy of every process of the simulator's hang-rank fault, through
LocalHost and a real sshd; py-spy missing, and ptrace refused by the kernel, each give one line and exit 1."""

from __future__ import annotations

import json
import os
import shutil
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


def test_py_spy_missing_is_one_line(hung: SimServer, tmp_path: Path) -> None:
    bare = tmp_path / "bin"  # a Python with no py-spy beside it, and a PATH without one
    bare.mkdir()
    (bare / "python3").symlink_to("/usr/bin/python3" if Path("/usr/bin/python3").exists() else VENV_PYTHON)
    proc = dump(["local"], hung, "--json", env={"PATH": f"{bare}:/usr/bin:/bin"}, python=str(bare / "python3"))
    assert shutil.which("py-spy", path=f"{bare}:/usr/bin:/bin") is None
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "py-spy is not installed on local" in lines[0] and "pip install py-spy" in lines[0], (
        lines
    )


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
