"""No test writes under the repository: a run that leaves a tracked file changed, or a new file that git does not
ignore, fails, naming them. `git status` is compared before and after the run (in xdist's controller, once), so a
file that was already changed before the run is not seen again; screenshots and snapshots are rewritten on
purpose only under `-m screenshots` and `--snapshot-update`, and those runs are not checked."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.lanes import asked_for

_BEFORE = pytest.StashKey[frozenset[str]]()


def _status(root: Path) -> frozenset[str] | None:
    """`git status` entries ("XY path"), or None outside a git checkout."""
    try:
        status = ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"]
        done = subprocess.run(status, cwd=root, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return frozenset(entry for entry in done.stdout.decode(errors="replace").split("\0") if entry)


def _checked(config: pytest.Config) -> bool:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller checks the whole run
        return False
    screenshots = asked_for("screenshots", config.getoption("markexpr", "") or "")
    return not (screenshots or config.getoption("snapshot_update", False))


def pytest_sessionstart(session: pytest.Session) -> None:
    if _checked(session.config) and (before := _status(session.config.rootpath)) is not None:
        session.config.stash[_BEFORE] = before


def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(_BEFORE, None)
    if before is None or (after := _status(session.config.rootpath)) is None:
        return
    changed = sorted(entry[3:] for entry in after - before)
    if changed:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        line = (
            f"the run changed files in the repository: {', '.join(changed)} (a test may write only under tmp_path; "
            "if you edited them yourself during the run, run again)"
        )
        if reporter is not None:
            reporter.write_line(line, red=True, bold=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
