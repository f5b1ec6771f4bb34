"""The lanes (tests/helpers/lanes.py): a test that requests a process fixture is `e2e`, and a test outside that
lane that starts a process anyway fails with one line naming the fixtures to request, however it started it."""

from __future__ import annotations

import pytest

from tests.helpers.pids import alive
from tests.helpers.sim import ROOT

pytest_plugins = ["pytester"]

CONFTEST = """
from tests.helpers.lanes import pytest_collection_modifyitems, pytest_configure, pytest_runtest_call, pytest_runtest_setup
from tests.helpers.processes import cli, spawn
"""

TESTS = """
import asyncio, os, subprocess

from pathlib import Path

import pytest


def test_pure():
    assert sorted([2, 1]) == [1, 2]


def test_popen():
    subprocess.run(["true"])


def test_asyncio_subprocess():
    async def main():
        proc = await asyncio.create_subprocess_exec("true")
        await proc.wait()

    asyncio.run(main())


def test_fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def test_system():
    os.system("true")


def test_caught_by_the_code_under_test():
    try:
        subprocess.run(["true"])
    except Exception:
        pass


@pytest.fixture
def started_in_a_fixture():
    subprocess.run(["true"])


def test_through_a_fixture(started_in_a_fixture):
    pass


def test_e2e_by_spawn(spawn):
    assert subprocess.run(["true"]).returncode == 0
    assert spawn(["true"]).wait() == 0


def test_e2e_by_cli(cli):
    assert cli("--version").returncode == 0
"""

STARTED = ("test_popen", "test_asyncio_subprocess", "test_fork", "test_system", "test_caught_by_the_code_under_test",
           "test_through_a_fixture")  # fmt: skip


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=TESTS)
    return pytester


def test_a_test_outside_the_e2e_lane_that_starts_a_process_fails_with_one_line(project: pytest.Pytester, spawn) -> None:
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=3, failed=len(STARTED) - 1, errors=1)  # the fixture's test errors at setup
    for name in STARTED:
        said = [line for line in result.outlines if line.startswith(f"test_inner.py::{name} is not an e2e test")]
        assert len(said) == 1, result.stdout.str()
        assert "but started a process (" in said[0] and "request one of the fixtures" in said[0]
        assert all(fixture in said[0] for fixture in ("cli", "sim", "spawn", "sshd", "tmux"))
    assert "StartedAProcess" not in result.stdout.str()  # the one line, not the exception's traceback
    assert "Traceback" not in result.stdout.str()


def test_the_marker_follows_the_fixtures(project: pytest.Pytester, spawn) -> None:
    e2e = project.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "--collect-only", "-q", "-m", "e2e")
    assert sorted(line.split("::")[1] for line in e2e.outlines if "::" in line) == [
        "test_e2e_by_cli",
        "test_e2e_by_spawn",
    ]
    fast = project.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-m", "not e2e")
    fast.assert_outcomes(passed=1, failed=len(STARTED) - 1, errors=1, deselected=2)


LEFT_BEHIND = """
import os, sys
from pathlib import Path

PIDS = Path(os.environ["PIDS_FILE"])


def note(*pids):
    with PIDS.open("a") as out:
        out.write("".join(f"{pid}\\n" for pid in pids))


def test_spawn_leaves_a_group(spawn):
    proc = spawn(["sh", "-c", "sleep 600 & sleep 600"])
    note(proc.pid)


def test_cli_popen(cli, tmp_path):
    from tests.helpers.ports import free_port

    note(cli.popen("simulate", "--log", tmp_path / "sim.log", "--port", str(free_port()), "--speed", "0.01").pid)


def test_sim(sim):
    note(sim(speed=1.0).pid)


def test_tmux(tmux):
    tmux("new-session", "-d", "sleep 600")
    note(int(tmux("display-message", "-p", "#{pid}").stdout))
"""


def test_every_process_a_fixture_started_is_gone_after_the_test(pytester: pytest.Pytester, spawn, monkeypatch) -> None:
    from tests.helpers.sim import group_pids

    pids_file = pytester.path / "pids"
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("PIDS_FILE", str(pids_file))
    pytester.makeconftest(CONFTEST.replace("import cli, spawn", "import cli, sim, spawn, tmux"))
    pytester.makepyfile(test_inner=LEFT_BEHIND)
    project = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    project.assert_outcomes(passed=4)
    pids = [int(line) for line in pids_file.read_text().split()]
    assert len(pids) == 4
    for pid in pids:
        assert not alive(pid) and group_pids(pid) == [], pid


def test_a_run_that_changes_a_tracked_file_fails_naming_it(pytester: pytest.Pytester, spawn, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest("from tests.helpers.untouched import pytest_sessionfinish, pytest_sessionstart\n")
    pytester.makepyfile(
        test_inner="""
from pathlib import Path

def test_rewrites_a_tracked_file():
    Path("tracked.txt").write_text("changed")

def test_writes_under_tmp_path(tmp_path):
    (tmp_path / "mine.txt").write_text("fine")
"""
    )
    (pytester.path / "tracked.txt").write_text("as committed")
    (pytester.path / ".gitignore").write_text("runpytest-*\n__pycache__/\n")  # pytester's own tmp_path lies here
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        spawn([*git, *args], cwd=pytester.path).wait(30)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(pytester.path))
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    said = [line for line in result.outlines if line.startswith("the run changed files in the repository")]
    assert len(said) == 1 and "tracked.txt" in said[0] and "mine.txt" not in said[0], result.stdout.str()
