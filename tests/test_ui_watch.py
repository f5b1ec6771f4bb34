"""The watch and demo commands end to end: real sshd for connect failures, the real simulator under the real TUI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Spawner
from tests.helpers.sshd import free_port
from tui.commands.demo import start_demo, stop_demo
from tui.commands.options import WatchOptions
from tui.commands.watch import build_app
from tui.core.config import Target, WatchConfig
from tui.core.state import Phase
from tui.core.wording import verdict_line
from tui.sources.control_cmds import pidfile_for
from tui.ui.panes.gpus import GpuPane
from tui.ui.panes.header import HeaderPane
from tui.ui.screens.confirm import ConfirmScreen

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def _sglang_tui(cli: Cli) -> Callable[..., subprocess.CompletedProcess[str]]:
    return lambda *argv: cli(*argv, timeout=60)


def test_the_tui_refuses_a_port_outside_1_65535_in_one_line(_sglang_tui) -> None:
    """QA pass: `sglang-tui local --port 0` opened the TUI and probed port 0 forever."""
    run = _sglang_tui("local", "--port", "0")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == "sglang-tui watch: --port: 0 is not a TCP port (1-65535) (try sglang-tui watch --help)\n"
    for value, said in (("-5", "not 0 or more seconds: '-5'"), ("0", "0 is not above 0 seconds")):
        run = _sglang_tui("local", "--stall-after", value)
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr == f"sglang-tui watch: --stall-after: {said} (try sglang-tui watch --help)\n"


def test_auth_failure_is_one_line_and_exit_4(sshd, _sglang_tui) -> None:
    done = _sglang_tui(
        "127.0.0.1",
        "--ssh-port",
        str(sshd.port),
        "--user",
        sshd.user,
        "--identity",
        str(sshd.wrong_identity),
        "--known-hosts",
        str(sshd.known_hosts),
        "--log",
        "/tmp/none.log",
    )
    assert done.returncode == 4, done.stderr
    lines = done.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and lines[0].startswith("sglang-tui: cannot connect to 127.0.0.1:")
        and "Traceback" not in done.stderr
    )


def test_nothing_listening_is_one_line_and_exit_4(sshd, _sglang_tui) -> None:
    done = _sglang_tui(
        "127.0.0.1",
        "--ssh-port",
        str(free_port()),
        "--user",
        sshd.user,
        "--identity",
        str(sshd.identity),
        "--known-hosts",
        str(sshd.known_hosts),
        "--log",
        "/tmp/none.log",
    )
    assert done.returncode == 4, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


async def test_demo_server_watched_to_ready_then_killed_from_the_keys(spawn: Spawner) -> None:
    demo = await start_demo(speed=200.0, fault=None)
    try:
        pgid = int(Path(pidfile_for(str(demo.log))).read_text().strip())
        assert _group_members(pgid)
        app, monitor = build_app(
            demo.host, demo.watch_options(read_only=False), host_label="local demo", control=demo.control
        )
        try:
            async with app.run_test(size=(160, 48)) as pilot:
                seen_shards = set()
                for _ in range(600):
                    await pilot.pause(0.05)
                    if app.state.shards is not None:
                        seen_shards.add(app.state.shards.done)
                    if app.state.phase in (Phase.READY, Phase.SERVING):
                        break
                assert app.state.phase in (Phase.READY, Phase.SERVING), verdict_line(app.state)
                assert app.state.shards is not None and app.state.shards.total == 64 and len(seen_shards) > 1
                assert app.query_one(GpuPane).row_count == 8
                await pilot.press("K")
                assert isinstance(app.screen, ConfirmScreen) and str(pgid) in app.screen.command
                await pilot.press("y")
                for _ in range(600):
                    await pilot.pause(0.05)
                    if app.control_results:
                        break
                result = app.control_results[-1]
                assert result.action == "kill" and result.ok and result.survivors == () and result.gpu_held == ()
                assert _group_members(pgid) == []
                for _ in range(400):  # the process watch reports the death within a few seconds, later under load
                    await pilot.pause(0.05)
                    header = app.query_one(HeaderPane).shown
                    if app.state.process_alive is False and "process: gone" in header:
                        break
                assert "kill done" in header and "process: gone" in header
        finally:
            await monitor.close()
    finally:
        stopped = await stop_demo(demo)
    assert stopped.ok and not demo.workdir.exists()


async def test_launch_when_absent_starts_the_simulator_and_watches_it(tmp_path: Path, spawn: Spawner) -> None:
    """`sglang-tui local --launch CMD` with nothing on the port: the app launches the real simulator itself."""
    from tests.helpers.sim import SimServer
    from tui.sources.local import LocalHost

    port, log, gpu_dir = free_port(), tmp_path / "sim.log", tmp_path / "gpus"
    argv = [
        sys.executable,
        "-m",
        "tui",
        "simulate",
        "--log",
        str(log),
        "--port",
        str(port),
        "--speed",
        "200",
        "--gpu-state",
        str(gpu_dir),
    ]
    launch = SimServer(log, port, gpu_dir, 0, argv, "").launch_command()  # not started: only its command line
    server = WatchConfig(
        port=port, log=str(log), remote_python=sys.executable, sim_gpus=str(gpu_dir), launch=launch, cwd=str(ROOT)
    )
    args = WatchOptions(Target(("local",)), server)
    host = LocalHost()
    await host.connect()
    app, monitor = build_app(host, args, host_label="local")
    control = app.sources.control  # the ServerControl that build_app made for the keys and the launch
    assert control is not None and app.sources.launch_if_absent
    pgid = None
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(200):
                await pilot.pause(0.05)
                if app.control_results:
                    break
            result = app.control_results[0]
            assert result.action == "launch" and result.ok, result
            assert launch in result.command  # the exact --launch command, quoted inside the launcher
            pgid = int(Path(pidfile_for(str(log))).read_text().strip())
            assert _group_members(pgid)
            texts = [line.text for line in app.log_pane.view.lines]
            assert f"$ {result.command}" in texts
            for _ in range(600):
                await pilot.pause(0.05)
                if app.state.phase in (Phase.READY, Phase.SERVING):
                    break
            assert app.state.phase in (Phase.READY, Phase.SERVING), verdict_line(app.state)
            header = app.query_one(HeaderPane).shown
            assert "last action: launch done: started pid" in header and "process: alive" in header
    finally:
        await monitor.close()
        stopped = await control.kill()
        await host.close()
    assert stopped.ok and stopped.survivors == ()
    assert pgid is not None and _group_members(pgid) == []
