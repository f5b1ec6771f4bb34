"""gpu_snapshots: one long-lived probe per host, GpuSnapshot per tick, errors as snapshots, restart with backoff."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from tests.helpers.processes import Spawner
from tests.helpers.sshd import ssh_host
from tui.sources.gpu import gpu_snapshots, probe_command
from tui.sources.local import LocalHost

GIB = 2**30


def _state(tmp_path: Path, used: int) -> Path:
    state = tmp_path / "gpus"
    state.mkdir(exist_ok=True)
    (state / "devices.json").write_text(
        json.dumps({"gpus": [{"index": 0, "uuid": "GPU-0", "name": "Sim", "total": 80 * GIB}]})
    )
    (state / f"proc-{os.getpid()}.json").write_text(
        json.dumps({"pid": os.getpid(), "gpu": 0, "used": used, "name": "me"})
    )
    return state


def _probe_pids(tag: str) -> list[int]:
    """Probe interpreters whose command line carries this test's sim dir (not the `sh -c` around them)."""
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            if tag.encode() in argv and argv[0] != b"sh":
                pids.append(int(entry))
        except OSError:
            pass
    return pids


def test_command_quotes_every_word() -> None:
    assert (
        probe_command("/opt/my env/bin/python", interval=0.5, sim_dir="/tmp/a b")
        == "exec '/opt/my env/bin/python' -u - --interval 0.5 --sim '/tmp/a b'"
    )


async def test_snapshots_follow_the_state_and_one_probe_runs(tmp_path: Path, spawn: Spawner) -> None:
    state = _state(tmp_path, 5 * GIB)
    host = LocalHost()
    await host.connect()
    stream = gpu_snapshots(host, remote_python=sys.executable, interval=0.05, sim_dir=str(state))
    try:
        first = await anext(stream)
        assert first.source == "sim" and first.gpus[0].used_bytes == 5 * GIB
        _state(tmp_path, 7 * GIB)
        for _ in range(40):
            snap = await anext(stream)
            if snap.gpus and snap.gpus[0].used_bytes == 7 * GIB:
                break
        assert snap.gpus[0].used_bytes == 7 * GIB
        assert len(_probe_pids(str(state))) == 1  # one long-lived probe, not one per tick
    finally:
        await stream.aclose()
        await host.close()
    assert _probe_pids(str(state)) == []


async def test_probe_killed_is_reported_and_restarted(tmp_path: Path, spawn: Spawner) -> None:
    state = _state(tmp_path, GIB)
    host = LocalHost()
    await host.connect()
    stream = gpu_snapshots(host, remote_python=sys.executable, interval=0.05, sim_dir=str(state))
    try:
        assert (await anext(stream)).error is None
        (victim,) = _probe_pids(str(state))
        os.kill(victim, signal.SIGKILL)
        snap = await anext(stream)
        while snap.error is None:
            snap = await anext(stream)
        assert snap.source == "probe" and "GPU probe exited (status -9" in snap.error
        started = time.monotonic()
        back = await anext(stream)
        assert back.error is None and back.gpus[0].used_bytes == GIB
        assert time.monotonic() - started >= 0.9  # it waited out the backoff before restarting
        assert _probe_pids(str(state)) not in ([], [victim])
    finally:
        await stream.aclose()
        await host.close()


async def test_missing_interpreter_is_an_error_snapshot(spawn: Spawner) -> None:
    host = LocalHost()
    await host.connect()
    stream = gpu_snapshots(host, remote_python="/nonexistent/python3")
    try:
        snap = await anext(stream)
        assert snap.error and "GPU probe exited (status 127" in snap.error and "not found" in snap.error
    finally:
        await stream.aclose()
        await host.close()


async def test_no_gpu_host_reports_the_probe_errors(spawn: Spawner) -> None:
    host = LocalHost()
    await host.connect()
    stream = gpu_snapshots(host, remote_python=sys.executable)
    try:
        sources = [(await anext(stream)).source for _ in range(3)]
        assert sources == ["nvml", "nvidia-smi", "none"]
    finally:
        await stream.aclose()
        await host.close()


async def test_snapshots_over_ssh(tmp_path: Path, sshd) -> None:
    state = _state(tmp_path, 3 * GIB)
    host = ssh_host(sshd)
    await host.connect()
    stream = gpu_snapshots(host, remote_python=sys.executable, interval=0.1, sim_dir=str(state))
    try:
        snaps = [await anext(stream) for _ in range(3)]
        assert all(s.source == "sim" and s.gpus[0].used_bytes == 3 * GIB for s in snaps)
        assert snaps[0].t is not None and snaps[0].t < snaps[2].t
    finally:
        await stream.aclose()
        await host.close()
    deadline = time.monotonic() + 5
    while _probe_pids(str(state)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _probe_pids(str(state)) == []
