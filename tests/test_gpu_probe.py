"""The GPU probe: its pure CSV/JSON parsing, its simulator backend, its nvidia-smi loop, and its exit when
nobody reads it any more (through LocalHost and through a real sshd)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.processes import Spawner
from tests.helpers.sshd import ssh_host
from tui.core.events import GpuInfo, GpuProcess, GpuSnapshot
from tui.core.gpuparse import memory_held, no_gpu_driver, parse_probe_line
from tui.sim.forkserver import start_ticks
from tui.sources import gpu_probe as probe
from tui.sources.gpu import probe_command, probe_script
from tui.sources.local import LocalHost

MIB = 1024 * 1024
GIB = 1024 * MIB
PROBE = str(Path(probe.__file__))

# ------------------------------------------------------------------------------------- nvidia-smi CSV


def test_smi_cells_na_and_not_supported_are_none() -> None:
    assert [probe.smi_value(c) for c in (" [N/A]", "[Not Supported]", "N/A", "", " 42 ")] == [
        None,
        None,
        None,
        None,
        "42",
    ]
    assert probe.smi_number("[N/A]") is None and probe.smi_number(None) is None
    assert probe.smi_number("612.34") == pytest.approx(612.34)
    assert probe.smi_number("bogus") is None


def test_gpu_line_full() -> None:
    line = "3, GPU-d33d0a1b, NVIDIA H200, 2575, 143771, 616, 87, 41, 612.34\n"
    gpu = probe.parse_smi_gpu_line(line)
    assert gpu == {
        "index": 3,
        "uuid": "GPU-d33d0a1b",
        "name": "NVIDIA H200",
        "used": 2575 * MIB,
        "total": 143771 * MIB,
        "reserved": 616 * MIB,
        "util": 87.0,
        "temp": 41.0,
        "power": pytest.approx(612.34),
        "procs": [],
    }


def test_gpu_line_na_fields_are_none_not_zero() -> None:
    gpu = probe.parse_smi_gpu_line("0, GPU-a, NVIDIA H200, 100, 143771, [N/A], [Not Supported], [N/A], [N/A]")
    assert gpu is not None
    assert (gpu["used"], gpu["reserved"], gpu["util"], gpu["temp"], gpu["power"]) == (100 * MIB, None, None, None, None)


def test_gpu_line_missing_fields_and_old_driver_field_list() -> None:
    short = probe.parse_smi_gpu_line("1, GPU-b, NVIDIA A100, 5")
    assert short is not None and short["used"] == 5 * MIB and short["total"] is None and short["power"] is None
    fields = tuple(f for f in probe.SMI_GPU_FIELDS if f != "memory.reserved")
    old = probe.parse_smi_gpu_line("0, GPU-c, Tesla V100, 10, 32768, 5, 50, 70.5", fields)
    assert old is not None and old["reserved"] is None and old["temp"] == 50.0 and old["power"] == 70.5


def test_non_gpu_lines_are_rejected() -> None:
    for line in (
        "",
        "\n",
        'Field "memory.reserved" is not a valid field to query.',
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
        "[N/A], GPU-x, name, 1, 2",
    ):
        assert probe.parse_smi_gpu_line(line) is None


def test_compute_app_lines_and_attachment() -> None:
    app = probe.parse_smi_app_line("2026/11/29 10:00:00.123, 484, GPU-a, 2566, sglang::scheduler_TP0, extra")
    assert app == {
        "pid": 484,
        "gpu_uuid": "GPU-a",
        "used": 2566 * MIB,
        "name": "sglang::scheduler_TP0, extra",
        "timestamp": "2026/11/29 10:00:00.123",
    }
    na = probe.parse_smi_app_line("ts, 485, GPU-b, [N/A], [Insufficient Permissions]")
    assert na is not None and na["used"] is None and na["name"] == ""
    assert probe.parse_smi_app_line("No running processes found") is None
    gpus = [probe.parse_smi_gpu_line(f"{i}, GPU-{'ab'[i]}, H200, 1, 2, 0, 0, 0, 0") for i in range(2)]
    probe.attach_procs(gpus, [app, na], lambda pid: "from-proc" if pid == 485 else "")  # type: ignore[arg-type]
    assert gpus[0]["procs"] == [{"pid": 484, "used": 2566 * MIB, "name": "sglang::scheduler_TP0, extra"}]
    assert gpus[1]["procs"] == [{"pid": 485, "used": None, "name": "from-proc"}]


# ----------------------------------------------------------------------------------------- probe JSON


def test_parse_probe_line_round_trip() -> None:
    line = probe.tick_line(
        "nvml",
        [
            {
                "index": 1,
                "uuid": "GPU-1",
                "name": "H200",
                "used": 5 * GIB,
                "total": 140 * GIB,
                "reserved": None,
                "util": 12,
                "temp": None,
                "power": 100.5,
                "procs": [{"pid": 7, "used": None, "name": "sglang::scheduler_TP1"}],
            }
        ],
    )
    snap = parse_probe_line(line)
    assert snap.source == "nvml" and snap.error is None and snap.t is not None
    assert snap.gpus == (
        GpuInfo(
            1,
            "GPU-1",
            "H200",
            5 * GIB,
            140 * GIB,
            None,
            12.0,
            None,
            100.5,
            (GpuProcess(7, None, "sglang::scheduler_TP1"),),
        ),
    )


def test_parse_probe_line_errors_never_raise() -> None:
    assert parse_probe_line(probe.tick_line("nvidia-smi", error="nvidia-smi exited")).error == "nvidia-smi exited"
    assert "non-JSON" in (parse_probe_line(b"Traceback (most recent call last):").error or "")
    assert parse_probe_line("[1, 2]").error == "GPU probe printed list, not an object"
    assert parse_probe_line('{"source": "nvml"}').error == "GPU probe line has no gpus list"
    odd = parse_probe_line('{"source": "nvml", "gpus": [{"index": "x"}, {"index": 0, "used": "lots", "procs": 3}]}')
    assert odd.gpus == (GpuInfo(0),)


def test_memory_held_by_pids() -> None:
    snap = GpuSnapshot(
        "sim",
        (GpuInfo(0, procs=(GpuProcess(5, 3 * GIB), GpuProcess(6, None))), GpuInfo(1, procs=(GpuProcess(9, GIB),))),
    )
    assert memory_held(snap, {6, 9}) == ((0, 6, 0), (1, 9, GIB))
    assert memory_held(snap, set()) == ()


def test_no_driver_here_is_one_error_line_and_exit_3(spawn: Spawner) -> None:
    """This CPU machine has neither NVML nor nvidia-smi: the probe says so and exits 3."""
    run = subprocess.run([sys.executable, PROBE, "--count", "1"], capture_output=True, text=True, timeout=30)
    lines = [parse_probe_line(x) for x in run.stdout.splitlines()]
    assert run.returncode == 3 and run.stderr == ""
    assert [s.source for s in lines] == ["nvml", "nvidia-smi", "none"]
    assert no_gpu_driver(lines[-1]) and all(s.error for s in lines)


# --------------------------------------------------------------------------------------- sim backend


def _sim_state(tmp_path: Path) -> tuple[Path, list[subprocess.Popen[bytes]]]:
    """Devices plus three entries: a live process, a dead (reaped) one, and a zombie."""
    state = tmp_path / "gpus"
    state.mkdir()
    (state / "devices.json").write_text(
        json.dumps(
            {
                "gpus": [
                    {"index": 0, "uuid": "GPU-s0", "name": "Sim H200", "total": 140 * GIB},
                    {"index": 1, "uuid": "GPU-s1", "name": "Sim H200", "total": 140 * GIB},
                ]
            }
        )
    )
    live = subprocess.Popen(["sleep", "30"])
    dead = subprocess.Popen(["true"])
    dead.wait()
    zombie = subprocess.Popen(["true"])  # never waited for until the end: a zombie meanwhile
    deadline = time.monotonic() + 5
    while probe.pid_alive(zombie.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    for pid, gpu, used in ((live.pid, 0, 20 * GIB), (dead.pid, 0, 30 * GIB), (zombie.pid, 1, 40 * GIB)):
        (state / f"proc-{pid}.json").write_text(
            json.dumps({"pid": pid, "gpu": gpu, "used": used, "name": "sglang::scheduler_TP0"})
        )
    (state / "proc-garbage.json").write_text("{not json")
    return state, [live, zombie]


def test_sim_backend_counts_only_live_processes(tmp_path: Path, spawn: Spawner) -> None:
    state, procs = _sim_state(tmp_path)
    later = subprocess.Popen(["sleep", "30"])  # has the pid an entry names, but started at another time: reused
    procs.append(later)
    started = start_ticks(later.pid)
    assert started is not None
    (state / "proc-reused.json").write_text(
        json.dumps({"pid": later.pid, "gpu": 1, "used": 50 * GIB, "name": "x", "start": started - 1})
    )
    try:
        assert not probe.pid_alive(procs[1].pid)  # the zombie exists in /proc but is not alive
        assert probe.pid_alive(later.pid, started) and not probe.pid_alive(later.pid, started - 1)
        run = subprocess.run(
            [sys.executable, PROBE, "--sim", str(state), "--count", "1"], capture_output=True, timeout=30
        )
        snap = parse_probe_line(run.stdout.splitlines()[-1])
        assert snap.source == "sim" and snap.error is None
        assert [g.used_bytes for g in snap.gpus] == [20 * GIB, 0]  # not the reused pid's 50 GiB on GPU 1
        assert snap.gpus[0].procs == (GpuProcess(procs[0].pid, 20 * GIB, "sglang::scheduler_TP0"),)
        procs[0].kill()
        procs[0].wait()
        again = parse_probe_line(
            subprocess.run(
                [sys.executable, PROBE, "--sim", str(state), "--count", "1"], capture_output=True, timeout=30
            ).stdout.splitlines()[-1]
        )
        assert [g.used_bytes for g in again.gpus] == [0, 0]  # SIGKILL released it, like a driver would
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_sim_backend_unreadable_state_is_an_error_line(tmp_path: Path, spawn: Spawner) -> None:
    run = subprocess.run(
        [sys.executable, PROBE, "--sim", str(tmp_path / "missing"), "--count", "2", "--interval", "0.05"],
        capture_output=True,
        timeout=30,
    )
    snaps = [parse_probe_line(x) for x in run.stdout.splitlines()]
    assert len(snaps) == 2 and all("simulated GPU state unreadable" in (s.error or "") for s in snaps)


# -------------------------------------------------------------------------- nvidia-smi loop (fake binary)

FAKE_SMI = """#!/bin/sh
# A FAKE nvidia-smi (this machine has no GPU): prints CSV like `nvidia-smi --query-… -lms N` does.
echo "$*" >> "$SPAWNS"
case "$*" in *memory.reserved*) [ -n "$NO_RESERVED" ] && { echo 'Field "memory.reserved" is not a valid field to query.'; exit 2; } ;; esac
ms=$(echo "$*" | sed 's/.*-lms=\\([0-9]*\\).*/\\1/'); s=$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')
n=0
while :; do
  case "$*" in
    *query-gpu*) if [ -n "$NO_RESERVED" ]; then echo "0, GPU-f0, Fake, 100, 1000, [N/A], 50, 60"; echo "1, GPU-f1, Fake, 200, 1000, 5, [N/A], 61";
                 else echo "0, GPU-f0, Fake, 100, 1000, 7, [N/A], 50, 60"; echo "1, GPU-f1, Fake, 200, 1000, 7, 5, [N/A], 61"; fi ;;
    *) [ $n -lt 3 ] && echo "2026/01/01 00:00:00.000, $$, GPU-f1, 150, sglang::scheduler_TP1" ;;
  esac
  n=$((n + 1)); sleep "$s"
done
"""


@pytest.mark.parametrize("no_reserved", [False, True])
def test_smi_backend_uses_two_long_lived_processes(tmp_path: Path, no_reserved: bool, spawn: Spawner) -> None:
    smi = tmp_path / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    spawns = tmp_path / "spawns"
    env = dict(os.environ, SPAWNS=str(spawns), NO_RESERVED="1" if no_reserved else "")
    run = subprocess.run(
        [sys.executable, PROBE, "--backend", "nvidia-smi", "--smi", str(smi), "--interval", "0.1", "--count", "8"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    snaps = [parse_probe_line(x) for x in run.stdout.splitlines()]
    assert run.returncode == 0 and len(snaps) == 8 and all(s.source == "nvidia-smi" and not s.error for s in snaps)
    assert all([g.index for g in s.gpus] == [0, 1] for s in snaps)
    first = snaps[0].gpus
    assert first[0].used_bytes == 100 * MIB and first[0].util_pct is None and first[1].temp_c is None
    assert first[1].reserved_bytes == (None if no_reserved else 7 * MIB)
    # The fake's compute app shows for its first 3 ticks, then nvidia-smi prints nothing: no procs.
    assert snaps[1].gpus[1].procs and snaps[1].gpus[1].procs[0].used_bytes == 150 * MIB
    assert snaps[-1].gpus[1].procs == () and all(s.gpus[0].procs == () for s in snaps)
    queries = spawns.read_text().splitlines()
    assert len(queries) == (3 if no_reserved else 2)  # never one spawn per tick


# ------------------------------------------------------------------------------- exit on channel close


def _probe_pids(tag: str) -> list[int]:
    """PIDs whose command line carries this test's unique sim dir (only our probe has it)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if tag.encode() in cmdline and probe.pid_alive(int(entry)):
                found.append(int(entry))
    return found


def _wait_none(tag: str, limit: float = 6.0) -> list[int]:
    deadline = time.monotonic() + limit
    while (pids := _probe_pids(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids


def test_probe_exits_on_broken_pipe_by_itself(tmp_path: Path, spawn: Spawner) -> None:
    """No kill: the reader closes its end and the probe's next write (EPIPE) ends it."""
    state, procs = _sim_state(tmp_path)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-u", "-", "--sim", str(state), "--interval", "0.1"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdin and proc.stdout
        proc.stdin.write(probe_script())
        proc.stdin.close()
        assert json.loads(proc.stdout.readline())["source"] == "sim"
        proc.stdout.close()
        assert proc.wait(timeout=5) == 0
        assert proc.stderr and proc.stderr.read() == b""  # quiet: no BrokenPipe traceback
    finally:
        for p in procs:
            p.kill()
            p.wait()


async def test_probe_gone_after_close_local(tmp_path: Path, spawn: Spawner) -> None:
    state, procs = _sim_state(tmp_path)
    host = LocalHost()
    try:
        await host.connect()
        running = await host.start(
            probe_command(sys.executable, interval=0.2, sim_dir=str(state)), input=probe_script()
        )
        assert parse_probe_line((await running.read()).splitlines()[0]).source == "sim"
        assert _probe_pids(str(state))
        await running.close()
        assert _wait_none(str(state)) == []
    finally:
        await host.close()
        for p in procs:
            p.kill()
            p.wait()


async def test_probe_gone_after_close_ssh(tmp_path: Path, sshd) -> None:
    state, procs = _sim_state(tmp_path)
    host = ssh_host(sshd)
    try:
        await host.connect()
        running = await host.start(
            probe_command(sys.executable, interval=0.2, sim_dir=str(state)), input=probe_script()
        )
        data = await running.read()
        assert parse_probe_line(data.splitlines()[0]).gpus[0].used_bytes == 20 * GIB
        assert _probe_pids(str(state))
        await running.close()  # closes the channel only: sshd sends no signal; the probe must notice
        assert _wait_none(str(state)) == []
    finally:
        await host.close()
        for p in procs:
            p.kill()
            p.wait()


@pytest.mark.gpu
def test_real_gpu_check(tmp_path: Path, spawn: Spawner) -> None:
    """ON A GPU HOST (`pytest -m gpu`): bench/gpu_probe_check.py's probe-vs-nvidia-smi and stop checks pass."""
    check = Path(__file__).resolve().parent.parent / "bench" / "gpu_probe_check.py"
    run = subprocess.run([sys.executable, str(check), str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
