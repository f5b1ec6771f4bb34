"""MuxHost: every command through ONE mux agent (the shape every Slurm node is reached in), against real processes.

The Host contract tests of tests/test_host.py run here too, through an agent started on this machine; then
what only a mux has: many commands on one agent process, binary-safe stdin in frames, a command's group gone
on close, the agent's death said to every command and a new agent on the next use, nothing left at close.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.helpers.pids import alive
from tests.helpers.processes import Spawner
from tests.test_host import (  # noqa: F401 (the Host contract, collected here with this file's `host`)
    test_closing_a_process_leaves_nothing_running,
    test_metacharacter_path_is_a_path,
    test_remote_shell_is_sh_and_input_reaches_stdin,
    test_run_returns_bytes_status_and_stderr,
    test_run_timeout_raises,
    test_start_sends_input_then_eof,
    test_stream_invalid_utf8_and_a_10mb_line,
)
from tui.core.events import ConnectionState
from tui.sources.host import HostError, HostUnreachable
from tui.sources.local import LocalHost
from tui.sources.muxhost import MuxHost, agent_command


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


@pytest.fixture
async def host(spawn: Spawner) -> AsyncIterator[MuxHost]:
    h = MuxHost(LocalHost(), agent_command(sys.executable), name="mux")
    await h.connect()
    yield h
    await h.close()


async def _until(check, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_every_command_runs_in_the_one_agent(host: MuxHost) -> None:
    agent = host.agent_pid
    assert agent is not None and alive(agent)
    tail = await host.start("echo started; exec sleep 30")
    assert await tail.read() == b"started\n"
    results = await asyncio.gather(*(host.run(f"echo $PPID {i}") for i in range(20)))
    assert [r.stdout.split()[1] for r in results] == [str(i).encode() for i in range(20)]
    assert {r.stdout.split()[0] for r in results} == {str(agent).encode()}  # each `sh -c` is the agent's child
    assert host.agent_pid == agent
    await tail.close()


async def test_stdin_is_binary_safe_in_frames_and_kept_open_without_input(host: MuxHost) -> None:
    data = bytes(range(256)) * 1024  # 256 KiB: many frames, every byte value, newlines included
    result = await host.run("cat", input=data)
    assert result.returncode == 0 and result.stdout == data
    # Without `input`, stdin stays open until close (what the watch loops' watchdog reads), and write() feeds it.
    proc = await host.start('while read line; do echo "got $line"; done')
    for word in (b"one", b"two"):
        await proc.write(word + b"\n")
        assert await proc.read() == b"got " + word + b"\n"
    await proc.close()


async def test_close_ends_the_commands_whole_group(host: MuxHost) -> None:
    proc = await host.start("sleep 300 & echo $!; wait")
    child = int((await proc.read()).strip())
    assert alive(child)
    await proc.close()
    await _until(lambda: not alive(child))
    assert host.agent_pid is not None and alive(host.agent_pid)  # the agent serves on
    assert (await host.run("echo next")).stdout == b"next\n"


async def test_the_agents_death_reaches_every_command_and_the_next_use_starts_another(host: MuxHost) -> None:
    states: list[ConnectionState] = []
    host.on_connection(states.append)
    first = host.agent_pid
    assert first is not None
    proc = await host.start("exec sleep 300")
    os.kill(first, signal.SIGKILL)
    with pytest.raises(HostUnreachable):
        while await proc.read():
            pass
    assert any(s.state == "reconnecting" for s in states)
    result = await host.run("echo again")
    assert result.stdout == b"again\n" and host.agent_pid not in (None, first)
    assert states[-1].state == "connected"


async def test_closing_the_host_leaves_no_agent_and_no_command(spawn: Spawner) -> None:
    h = MuxHost(LocalHost(), agent_command(sys.executable), name="mux")
    await h.connect()
    agent = h.agent_pid
    assert agent is not None
    await h.start("exec sleep 300")
    await _until(lambda: len(_children(agent)) == 1)
    child = _children(agent)[0]
    await h.close()
    await _until(lambda: not alive(agent) and not alive(child))
    with pytest.raises(HostError):
        await h.run("true")


async def test_an_agent_that_cannot_start_is_one_clear_line(spawn: Spawner) -> None:
    h = MuxHost(LocalHost(), agent_command("/nonexistent/python3"), name="nowhere")
    with pytest.raises(HostError) as err:
        await h.connect()
    assert "nowhere" in str(err.value) and "/nonexistent/python3" in str(err.value)
    assert "\n" not in str(err.value)
    await h.close()
