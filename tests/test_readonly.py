"""`--read-only` is structural: the part that can signal a process (ServerControl) is not built at all, while
the read-only process watch still finds and watches the server. Against the real simulator, over LocalHost."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Sims
from tests.helpers.sim import wait_for_log
from tui.commands.options import WatchOptions
from tui.commands.watch import build_app
from tui.core.config import Target, WatchConfig
from tui.core.wording import verdict_line
from tui.sources.control import ServerControl
from tui.sources.local import LocalHost
from tui.sources.procwatch import ProcessWatch
from tui.ui.panes.header import HeaderPane


def _args(sim_log: Path, port: int, gpus: Path, *, read_only: bool) -> WatchOptions:
    server = WatchConfig(port=port, log=str(sim_log), remote_python=sys.executable, sim_gpus=str(gpus),
                         read_only=read_only, launch="sleep 60")  # fmt: skip
    return WatchOptions(Target(("local",)), server)


def _controllers() -> list[ServerControl]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, ServerControl)]


async def test_a_read_only_session_builds_no_controller_and_still_watches_the_processes(
    tmp_path: Path, sim: Sims
) -> None:
    server = sim(tmp_path, tp=2, shards=4, speed=50.0)
    host = LocalHost()
    try:
        wait_for_log(server, b"server_args=")
        await host.connect()
        before = len(_controllers())
        app, session = build_app(
            host, _args(server.log, server.port, server.gpu_state, read_only=True), host_label="local"
        )
        watch = session.monitor.process_watch
        assert isinstance(watch, ProcessWatch) and not isinstance(watch, ServerControl)
        assert app.sources.control is None and not app.sources.launch_if_absent
        assert len(_controllers()) == before  # nothing that can signal was built, not even out of reach
        try:
            async with app.run_test(size=(160, 48)) as pilot:
                for _ in range(600):  # the process watch still finds the simulator's processes
                    await pilot.pause(0.05)
                    if app.state.process_alive and "process: alive" in app.query_one(HeaderPane).shown:
                        break
                assert app.state.process_alive is True, verdict_line(app.state)
                assert "process: alive" in app.query_one(HeaderPane).shown
                assert server.pid in app.state.process_pids
        finally:
            await session.close()
    finally:
        await host.close()


async def test_read_only_ignores_a_controller_handed_in_and_without_it_one_is_built(tmp_path: Path) -> None:
    """The demo hands its own ServerControl in; under --read-only neither the keys nor the Monitor get it."""
    host = LocalHost()
    await host.connect()
    try:
        given = ServerControl(host, port=1, log_path=str(tmp_path / "none.log"))
        args = _args(tmp_path / "none.log", 1, tmp_path / "gpus", read_only=True)
        app, session = build_app(host, args, host_label="local", control=given)
        assert app.sources.control is None and session.monitor.process_watch is not given
        assert not isinstance(session.monitor.process_watch, ServerControl)
        app, session = build_app(
            host, _args(tmp_path / "none.log", 1, tmp_path / "gpus", read_only=False), host_label="local"
        )
        assert isinstance(session.monitor.process_watch, ServerControl)
        assert app.sources.control is session.monitor.process_watch  # one controller: the keys and the watch
    finally:
        await host.close()


@pytest.mark.parametrize("command", [["wait", "local"], ["local"]])
def test_launch_and_read_only_together_are_one_line_and_exit_2(command: list[str], tmp_path: Path, cli: Cli) -> None:
    marker = tmp_path / "launched"
    done = cli(*command, "--launch", f"touch {marker}", "--read-only", timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "--launch" in lines[0] and "--read-only" in lines[0] and "drop one" in lines[0]
    assert not marker.exists()  # nothing was launched
