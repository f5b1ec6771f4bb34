"""Finding the SGLang server on a host with neither --port nor --log: the pure parser, then real simulators
started as users start SGLang (`python -m tui simulate … > log 2>&1`), found over the real sshd, and a
titled `sglang::` process whose parent writes to a pty (no log file)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.processes import Cli, Sims, Spawner
from tests.helpers.sim import ROOT, wait_for_log
from tests.helpers.sshd import Sshd, ssh_host
from tui.commands.options import StopOptions, WaitOptions
from tui.core.config import WatchConfig
from tui.core.discovery import DEFAULT_PORT, SEP, parse_discovery, several_line
from tui.sources.discover import discover
from tui.sources.local import LocalHost


def _a(pid: int, *argv: str) -> str:
    return f"A {pid} " + SEP.join(argv) + SEP


def test_parse_takes_port_model_and_log_from_the_main_process() -> None:
    text = "\n".join([
        _a(41, "python3", "-m", "sglang.launch_server", "--model-path", "/m/Llama 3", "--port=31000"),
        "O 41 1 /var/log/sgl.log", "O 41 2 /var/log/sgl.log",
        _a(77, "python", "-m", "sglang.launch_server", "--model", "Qwen/Qwen3-8B"),
        "O 77 1 /dev/pts/4", "O 77 2 /dev/pts/4",
        "garbage line", "O x 1 /nope",
    ])  # fmt: skip
    first, second = parse_discovery(text)
    assert (first.pid, first.port, first.model, first.log) == (41, 31000, "/m/Llama 3", "/var/log/sgl.log")
    assert not first.terminal
    assert (second.pid, second.port, second.model, second.log) == (77, DEFAULT_PORT, "Qwen/Qwen3-8B", None)
    assert second.terminal and "terminal /dev/pts/4" in second.summary()
    line = several_line([first, second])
    assert "2 SGLang servers" in line and "port 31000" in line and "port 30000" in line and "--port" in line


def test_parse_reads_servers_started_with_sglang_serve() -> None:
    """`sglang serve` (2026's documented launch) beside `python -m sglang.launch_server`: the model may come first."""
    text = "\n".join([
        _a(51, "/usr/bin/python3", "/usr/local/bin/sglang", "serve", "Qwen/Qwen3-8B", "--port", "31001"),
        "O 51 1 /var/log/a.log", "O 51 2 /var/log/a.log",
        _a(52, "/usr/bin/python3", "/usr/local/bin/sglang", "serve", "--model-path", "/m/x", "--tp", "2"),
        "O 52 2 /var/log/b.log",
        _a(53, "/usr/bin/python3", "/usr/local/bin/sglang", "serve", "--port", "31003"),
    ])  # fmt: skip
    a, b, c = parse_discovery(text)
    assert (a.pid, a.port, a.model, a.log) == (51, 31001, "Qwen/Qwen3-8B", "/var/log/a.log")
    assert (b.pid, b.port, b.model, b.log) == (52, DEFAULT_PORT, "/m/x", "/var/log/b.log")
    assert (c.port, c.model) == (31003, None)


def test_parse_prefers_a_file_and_refuses_pipes_devnull_and_deleted_files() -> None:
    text = "\n".join([
        _a(5, "python", "--port", "1"), "O 5 1 pipe:[123]", "O 5 2 /tmp/err.log",
        _a(6, "python"), "O 6 1 /dev/null", "O 6 2 /dev/null",
        _a(7, "python"), "O 7 1 /tmp/gone.log (deleted)", "O 7 2 ",
        _a(8, "python"),
    ])  # fmt: skip
    by_pid = {s.pid: s for s in parse_discovery(text)}
    assert by_pid[5].log == "/tmp/err.log"
    assert by_pid[6].log is None and "/dev/null" in by_pid[6].summary()
    assert by_pid[7].log is None
    assert by_pid[8].log is None and by_pid[8].output == "" and "cannot be seen" in by_pid[8].summary()


def test_two_simulators_are_found_over_ssh_and_wait_asks_for_port(
    sshd: Sshd, tmp_path: Path, sim: Sims, cli: Cli
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    sims = [
        sim(tmp_path / "a", speed=20.0, tp=2, shards=8),
        sim(tmp_path / "b", speed=20.0, tp=2, shards=8),
    ]
    try:
        for server in sims:
            wait_for_log(server, b"Load weight begin", timeout=30)

        async def found() -> dict[int, object]:
            host = ssh_host(sshd)
            await host.connect()
            try:
                return {s.pid: s for s in await discover(host)}
            finally:
                await host.close()

        servers = asyncio.run(found())
        for server in sims:
            mine = servers[server.pid]
            assert mine.port == server.port and mine.log == str(server.log)  # type: ignore[attr-defined]
        proc = cli("wait", "127.0.0.1", *sshd.ssh_args(), "--timeout", "60", "--no-history", timeout=90)
        assert proc.returncode == 2, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "SGLang servers found" in lines[0] and "--port" in lines[0]
        assert all(f"port {server.port}" in lines[0] for server in sims)
        # the TUI asks on the terminal before it starts; with no terminal to ask on, the same line and exit 2
        proc = cli("127.0.0.1", *sshd.ssh_args(), "--no-history", timeout=90)
        assert proc.returncode == 2, proc.stderr
        assert "SGLang servers found" in proc.stderr and all(f"port {server.port}" in proc.stderr for server in sims)
    finally:
        for server in sims:
            server.stop()


def test_the_chosen_server_gives_wait_its_port_and_log(tmp_path: Path, sim: Sims) -> None:
    from tui.commands.find_server import find

    server = sim(tmp_path, speed=20.0, tp=2, shards=8)
    wait_for_log(server, b"Load weight begin", timeout=30)
    given = WatchConfig(port=30000)
    said: list[str] = []

    async def go() -> WatchConfig | int:
        host = LocalHost()
        await host.connect()
        try:  # other simulators may run on this machine: pick ours as the user would
            return await find(
                host,
                given,
                "local",
                say=said.append,
                choose=lambda found: next(s for s in found if s.pid == server.pid),
            )
        finally:
            await host.close()

    config = asyncio.run(go())
    assert isinstance(config, WatchConfig) and given == WatchConfig(port=30000)  # a new value; the given one kept
    assert (config.port, config.log) == (server.port, str(server.log))
    assert said and f"port {server.port}" in said[0]


def test_a_server_writing_to_a_terminal_has_no_log_file(spawn: Spawner) -> None:
    """A parent python on a pty with a `sglang::scheduler` child, as `python -m sglang.launch_server` in a shell."""
    parent_code = (
        f"import sys, time; sys.path.insert(0, {str(ROOT)!r})\n"
        "from tui.sim.procs import spawn_titled_python\n"
        "child = spawn_titled_python('sglang::scheduler', 'import time; time.sleep(120)')\n"
        "print('up', flush=True); child.wait()\n"
    )
    leader, follower = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", parent_code, "--port", "41999", "--model-path", "/m/x"],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    try:
        seen = b""
        deadline = time.monotonic() + 30
        while b"up" not in seen and time.monotonic() < deadline:
            seen += os.read(leader, 100)

        async def found() -> list[object]:
            host = LocalHost()
            await host.connect()
            try:
                return [s for s in await discover(host) if s.pid == proc.pid]
            finally:
                await host.close()

        (mine,) = asyncio.run(found())
        assert mine.port == 41999 and mine.model == "/m/x"  # type: ignore[attr-defined]
        assert mine.log is None and mine.terminal  # type: ignore[attr-defined]
        assert "terminal /dev/pts/" in mine.summary()  # type: ignore[attr-defined]
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
        os.close(leader)


def test_the_cli_discovers_only_when_neither_port_nor_log_is_given(monkeypatch: object) -> None:
    import tui.cli as cli
    import tui.commands.stop as stop
    import tui.commands.wait as wait

    seen: list[WaitOptions | StopOptions] = []
    monkeypatch.setattr(wait, "run", lambda args: seen.append(args) or 0)  # type: ignore[attr-defined]
    monkeypatch.setattr(stop, "run", lambda args: seen.append(args) or 0)  # type: ignore[attr-defined]
    for argv in (
        ["wait", "local"],
        ["wait", "local", "--port", "30000"],
        ["wait", "local", "--log", "/x.log"],
        ["wait", "local", "--launch", "true"],
        ["stop", "local"],
        ["wait", "local", "--port", "31000"],
    ):
        assert cli.main(argv) == 0
    assert [(a.server.port, a.target.discover) for a in seen] == [
        (30000, True),
        (30000, False),
        (30000, False),
        (30000, False),
        (30000, False),
        (31000, False),
    ]
