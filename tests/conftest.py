from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import (  # noqa: F401 (imported for what they set)
    bytecode,  # first: caches bytecode for what follows
    hypothesis_profile,  # no wall-clock deadlines in property tests
)
from tests.helpers.crossuid import other_user, shared_dir, user_sshd  # noqa: F401 (fixtures, registered here)
from tests.helpers.dependency_filters import keep_dependency_warnings_out
from tests.helpers.lanes import (  # noqa: F401 (the lanes' hooks, registered here)
    pytest_collection_modifyitems,
    pytest_runtest_call,
    pytest_runtest_setup,
)
from tests.helpers.lanes import pytest_configure as configure_lanes
from tests.helpers.processes import cli, module_sim, module_spawn, sim, spawn, tmux  # noqa: F401 (fixtures)
from tests.helpers.slurm import cluster, heal_session_cluster, slurm_cluster  # noqa: F401 (fixtures, registered here)
from tests.helpers.sshd import Sshd
from tests.helpers.untouched import pytest_sessionfinish, pytest_sessionstart  # noqa: F401 (no test writes the repo)

# ../shared from the repository root; a git worktree elsewhere names it in SGLANG_TUI_SHARED
SHARED = Path(os.environ.get("SGLANG_TUI_SHARED") or Path(__file__).resolve().parent.parent.parent / "shared")


def pytest_configure(config: pytest.Config) -> None:
    configure_lanes(config)
    keep_dependency_warnings_out(config)


@pytest.fixture(autouse=True, scope="session")
def _private_history(tmp_path_factory: pytest.TempPathFactory):
    """Every `wait`/TUI the tests run records into a private history file, never the user's."""
    import os

    old = os.environ.get("SGLANG_TUI_HISTORY")
    os.environ["SGLANG_TUI_HISTORY"] = str(tmp_path_factory.mktemp("history") / "history.sqlite3")
    yield
    if old is None:
        os.environ.pop("SGLANG_TUI_HISTORY", None)
    else:
        os.environ["SGLANG_TUI_HISTORY"] = old


@pytest.fixture(autouse=True)
def _test_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """... and each test its own, so that no test's ETA or stall budget rests on another test's launches; and its
    own state directory, where dumps, saved logs and copies go (never the user's ~/.local/state)."""
    monkeypatch.setenv("SGLANG_TUI_HISTORY", str(tmp_path / "history.sqlite3"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture(autouse=True)
def _slurm_cluster_whole(request: pytest.FixtureRequest) -> None:
    """A Slurm test starts on a whole cluster: a daemon that died in an earlier test is started again."""
    if "slurm_cluster" in request.fixturenames:
        heal_session_cluster()


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory):
    """One real OpenSSH sshd on loopback for the whole session (installed by .ci/run)."""
    server = Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture
def fresh_sshd(tmp_path: Path):
    """A private sshd for tests that kill and restart it."""
    server = Sshd(tmp_path / "sshd").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def real_logs_dir() -> Path | None:
    """../shared/real-logs when present (real SGLang logs from public issue threads; not copied here)."""
    path = SHARED / "real-logs"
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def real_logs_2_dir() -> Path | None:
    """../shared/real-logs-2 when present: the second set (phase_alternatives; tp_size only where the text states it)."""
    path = SHARED / "real-logs-2"
    return path if path.is_dir() else None
