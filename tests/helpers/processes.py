"""The fixtures through which a test starts a real process: each one stops what it started at teardown, and
requesting any of them puts the test in the `e2e` lane (tests/helpers/lanes.py).

- `spawn(argv, **popen_kw) -> Popen`: any process, in its own session, killed with its group at teardown;
  `spawn.run(argv, timeout=, **kw) -> CompletedProcess[str]` one run to its end.
  Requested without being called, it also marks a test that starts processes in-process (LocalHost's `sh -c`,
  asyncio subprocesses). `module_spawn` is the same for a module-scoped fixture.
- `cli(*args, timeout=, env=, input=) -> CompletedProcess[str]`: `python -m tui ARGS…` run to its end;
  `cli.popen(*args, **kw) -> Popen[str]` for a test that follows `wait --json` line by line.
- `sim(**kwargs) -> SimServer`: `tests.helpers.sim.start_sim` in a fresh directory of tmp_path (or `path=`);
  `sim.nodes(path, nnodes=n, **kwargs)` a multi-node launch (`start_nodes`). `module_sim` for a module-scoped fixture.
  `PipeLines(proc.stdout).wait_for(condition)` waits for the deciding line without blocking on the pipe.
  `read_rest(proc, timeout)` is `communicate` for a test that already read lines from `proc.stdout`.
- `tmux`: a private tmux server (its own `-L` socket); `tmux("new-session", …)` runs one tmux command.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import pytest

from tests.helpers.sim import ROOT, SimServer, start_nodes, start_sim


class Spawner:
    """Starts processes and kills each one (its whole group when it leads one) at teardown."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[Any]] = []

    def __call__(self, argv: Sequence[str | os.PathLike[str]], **popen_kw: Any) -> subprocess.Popen[Any]:
        popen_kw.setdefault("start_new_session", True)
        popen_kw.setdefault("stdin", subprocess.DEVNULL)
        proc: subprocess.Popen[Any] = subprocess.Popen(list(argv), **popen_kw)
        self.started.append(proc)
        return proc

    @staticmethod
    def run(
        argv: Sequence[str | os.PathLike[str]], *, timeout: float = 60.0, **run_kw: Any
    ) -> subprocess.CompletedProcess[str]:
        """Run to the end, its output captured as text (stdin empty unless `input=`); killed at `timeout`."""
        run_kw.setdefault("capture_output", True)
        run_kw.setdefault("text", True)
        if "input" not in run_kw:
            run_kw.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.run(list(argv), timeout=timeout, **run_kw)

    def stop_all(self) -> None:
        for proc in reversed(self.started):
            _kill(proc)
        self.started.clear()


def _kill(proc: subprocess.Popen[Any]) -> None:
    try:
        leads_group = os.getpgid(proc.pid) == proc.pid
    except ProcessLookupError:
        leads_group = False
    try:
        if leads_group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        pass
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def child_env(env: Mapping[str, str | None] | None) -> dict[str, str]:
    """The test's environment with these variables set (None: unset)."""
    merged = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


STACKS_S = 2.0  # a hung command's time to print its stacks before it is killed
HUNG_TAIL_LINES = 200  # of a hung command's stderr, shown in the failure


class Cli:
    """`python -m tui …` from the repository root, the way a user runs `sglang-tui …`."""

    def __init__(self, spawner: Spawner) -> None:
        self._spawner = spawner

    @staticmethod
    def argv(*args: str | os.PathLike[str]) -> list[str]:
        return [sys.executable, "-m", "tui", *map(str, args)]

    def __call__(
        self,
        *args: str | os.PathLike[str],
        timeout: float = 120.0,
        env: Mapping[str, str | None] | None = None,
        input: str | None = None,
        prefix: Sequence[str] = (),
        cwd: Path = ROOT,
    ) -> subprocess.CompletedProcess[str]:
        """Run to the end (stdin empty unless `input`); `prefix` wraps it (e.g. `setpriv …`, which execs it). One
        that has not ended after `timeout` is asked where it waits (SIGUSR1: tui/commands/stack_dump.py), then
        killed, and the test fails with the end of its stderr, the stacks included."""
        argv = [*prefix, *self.argv(*args)]
        with subprocess.Popen(
            argv, cwd=cwd, env=child_env(env), stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ) as proc:  # fmt: skip
            try:
                out, err = proc.communicate(input, timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGUSR1)
                time.sleep(STACKS_S)
                proc.kill()
                out, err = proc.communicate()
                tail = "\n".join(err.splitlines()[-HUNG_TAIL_LINES:])
                raise AssertionError(
                    f"{' '.join(map(str, args))} had not ended after {timeout:g} s; the end of its stderr:\n{tail}"
                ) from None
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def popen(
        self, *args: str | os.PathLike[str], env: Mapping[str, str | None] | None = None, **popen_kw: Any
    ) -> subprocess.Popen[str]:
        """Started in its own session with stdout and stderr piped as text; killed with its group at teardown."""
        popen_kw.setdefault("stdout", subprocess.PIPE)
        popen_kw.setdefault("stderr", subprocess.PIPE)
        popen_kw.setdefault("text", True)
        popen_kw.setdefault("cwd", ROOT)
        return self._spawner(self.argv(*args), env=child_env(env), **popen_kw)


class Sims:
    """Simulators started for a test or a module, each in a fresh directory; all stopped at teardown."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self.started: list[SimServer] = []

    def _fresh(self) -> Path:
        where = self._root / f"sim{len(self.started)}-{uuid.uuid4().hex[:6]}"
        where.mkdir(parents=True)
        return where

    def __call__(self, path: Path | None = None, **kwargs: Any) -> SimServer:
        if path is not None:
            path.mkdir(parents=True, exist_ok=True)
        server = start_sim(path or self._fresh(), **kwargs)
        self.started.append(server)
        return server

    def nodes(self, path: Path | None = None, nnodes: int = 2, **kwargs: Any) -> list[SimServer]:
        """A simulated multi-node launch (`start_nodes`): PATH/nodeR/sim.log."""
        servers = start_nodes(path or self._fresh(), nnodes, **kwargs)
        self.started.extend(servers)
        return servers

    def stop_all(self) -> None:
        for server in self.started:
            server.stop()
        self.started.clear()


class Tmux:
    """A tmux server of the test's own (`tmux -L SOCKET`, no user config): sessions, keys, screens."""

    def __init__(self) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.socket = f"sglang-tui-test-{worker}-{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def argv(self, *args: str) -> list[str]:
        return ["tmux", "-L", self.socket, "-f", "/dev/null", *args]

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(*args), capture_output=True, text=True, check=check, timeout=30)

    def kill_server(self) -> None:
        subprocess.run(self.argv("kill-server"), capture_output=True, timeout=30)


class PipeLines:
    """The lines a child writes to one pipe (`cli.popen(...).stdout`), read by a thread, so a test can wait for
    the deciding one (`wait_for`) without blocking, then stop."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.append(line)

    def wait_for(self, condition: Callable[[str], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(condition(line) for line in list(self.lines)):
            assert time.monotonic() < deadline, f"no such line after {timeout} s:\n{self.text()}"
            time.sleep(0.02)

    def text(self, timeout: float = 0.0) -> str:
        self._thread.join(timeout)
        return "".join(self.lines)


def read_rest(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """What is left on stdout and stderr once the process ends, read through the same file objects. Not
    `proc.communicate`: it reads the pipes' raw descriptors, so the lines a `for line in proc.stdout` had already
    buffered (the next ones often arrive in the same read) would be lost (m33: the last line, the verdict's)."""
    streams = [proc.stdout, proc.stderr]
    texts = ["", ""]

    def read(i: int) -> None:
        stream = streams[i]
        texts[i] = stream.read() if stream is not None else ""

    readers = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(2)]
    for reader in readers:
        reader.start()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    for reader in readers:
        reader.join(10)  # at EOF once the process and anything it left holding the pipes are gone
    return texts[0], texts[1]


@pytest.fixture
def spawn() -> Iterator[Spawner]:
    spawner = Spawner()
    yield spawner
    spawner.stop_all()


@pytest.fixture(scope="module")
def module_spawn() -> Iterator[Spawner]:
    spawner = Spawner()
    yield spawner
    spawner.stop_all()


@pytest.fixture
def cli(spawn: Spawner) -> Cli:
    return Cli(spawn)


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sims]:
    sims = Sims(tmp_path)
    yield sims
    sims.stop_all()


@pytest.fixture(scope="module")
def module_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sims]:
    sims = Sims(tmp_path_factory.mktemp("sims"))
    yield sims
    sims.stop_all()


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    server = Tmux()
    yield server
    server.kill_server()
