"""The two lanes: a test is `e2e` when it starts a real process, and it says so by requesting one of the fixtures
that start them (E2E_FIXTURES, anywhere in its fixture closure). `pytest -m "not e2e"` runs the fast lane.

The tripwire keeps the marking honest: in a test that is not `e2e`, starting a process (subprocess.Popen, which
asyncio's subprocesses and os.popen go through, os.fork, os.posix_spawn, os.system…) fails the test with one line
that names the fixtures to request. It is an audit hook (PEP 578), so it sees every way a process is started,
whatever layer of the code starts it. It guards a test's setup and call; teardown is not guarded, because a
module's or the session's fixtures (an sshd) are torn down during whichever test happens to run last.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Generator
from dataclasses import dataclass

import pytest

from tests.helpers.slurm import cluster_daemon_died

# Requesting any of these (directly or through another fixture) puts a test in the e2e lane.
E2E_FIXTURES = frozenset({
    "sshd", "fresh_sshd", "user_sshd", "other_user", "shared_dir",  # real OpenSSH servers, real users
    "sim", "module_sim",  # the simulator (tests/helpers/sim.py)
    "cli",  # `python -m tui …`
    "tmux",  # a real terminal
    "spawn", "module_spawn",  # any other process, or processes the test starts in-process (LocalHost, asyncio)
    "slurm_cluster",  # a real 2-node Slurm cluster (tests/helpers/slurm.py)
})  # fmt: skip

# Tests that share one costly session fixture run on one xdist worker (`--dist loadgroup`), so the fixture
# starts once: every test that requests the fixture (directly or not) gets that xdist_group.
XDIST_GROUPS = {"slurm_cluster": "slurm"}

# Audit events (https://docs.python.org/3/library/audit_events.html) that start a process.
_PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system"})


def is_e2e(item: pytest.Item) -> bool:
    return item.get_closest_marker("e2e") is not None


# Run only when `-m` names them (they rewrite screenshots/, or need a GPU): `pytest -m "not e2e"` leaves them out.
OPT_IN = ("screenshots", "gpu")


def asked_for(marker: str, markexpr: str) -> bool:
    return re.search(rf"(?<!not )\b{marker}\b", markexpr) is not None


# A module's own simulators or processes (module_sim, module_spawn) are set up once per worker that runs any
# of its tests: its tests go to one worker (`--dist loadgroup`), so they are set up once.
MODULE_FIXTURES = frozenset({"module_sim", "module_spawn"})


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker, and before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if E2E_FIXTURES & names:
            item.add_marker(pytest.mark.e2e)
        for fixture, group in XDIST_GROUPS.items():
            if fixture in names:
                item.add_marker(pytest.mark.xdist_group(group))
        if "slurm_cluster" in names:
            # Once more only when it failed while a daemon of the test cluster was dead (then healed before the
            # rerun): the cluster's loss, not sglang-tui's, said on stderr with the daemon's logs (slurm.heal)
            item.add_marker(pytest.mark.flaky(reruns=1, condition=cluster_daemon_died))
        if MODULE_FIXTURES & names and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    markexpr = config.getoption("markexpr", "") or ""
    left_out = [m for m in OPT_IN if not asked_for(m, markexpr)]
    deselected = [item for item in items if any(item.get_closest_marker(m) for m in left_out)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item not in deselected]


class StartedAProcess(RuntimeError):
    """Raised where a test outside the e2e lane starts a process (and the test is failed with its line)."""


@dataclass
class _Guard:
    nodeid: str
    violation: str | None = None


_guard: _Guard | None = None  # the fast-lane test running now (setup or call), if any
_installed = threading.Lock()
_hook_on = False


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event not in _PROCESS_EVENTS:
        return
    guard = _guard
    if guard is None:
        return
    what = event if not args else f"{event} {_short(args[1] if event == 'subprocess.Popen' else args[0])}"
    line = (
        f"{guard.nodeid} is not an e2e test but started a process ({what}): request one of the fixtures that "
        f"start processes ({', '.join(sorted(E2E_FIXTURES))}; tests/helpers/processes.py)"
    )
    if guard.violation is None:
        guard.violation = line
    raise StartedAProcess(line)


def _short(value: object) -> str:
    text = " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def install() -> None:
    """Once per process (an audit hook cannot be removed; it only looks at `_guard`)."""
    global _hook_on
    with _installed:
        if not _hook_on:
            sys.addaudithook(_audit)
            _hook_on = True


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if not any(line.startswith("e2e:") for line in config.getini("markers")):  # pyproject registers it
        config.addinivalue_line("markers", "e2e: starts a real process (applied by fixture use)")
    install()


def _guarded(item: pytest.Item) -> Generator[None, object, object]:
    global _guard
    if is_e2e(item):
        return (yield)
    before, _guard = _guard, _Guard(item.nodeid)
    mine = _guard
    try:
        result = yield
    except BaseException:
        if mine.violation is None:
            raise
    finally:
        _guard = before
    if mine.violation is not None:  # also when the code under test caught StartedAProcess and went on
        raise pytest.fail.Exception(mine.violation, pytrace=False) from None
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item))
