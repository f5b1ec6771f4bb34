"""Publishes simulated GPU memory for the GPU probe's simulator backend (the layout is in the team contract).

`DIR/devices.json` lists the GPUs; `DIR/proc-<pid>.json` holds one process's memory on one GPU, and the
process's start time (`start`, clock ticks since boot). Files are replaced atomically (temp file + rename). The
reader counts an entry only while its pid is alive with that start time, the way a driver releases memory when a
process dies, so nothing here has to clean up after a SIGKILL: the pid of a process killed long ago may be another
process's by then (pid_max is 32768 on many hosts, this project's CI machines among them).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from tui.sim.forkserver import start_ticks
from tui.sim.memory import GIB, H200_TOTAL_MIB

GPU_NAME = "NVIDIA H200"
TOTAL_BYTES = H200_TOTAL_MIB * 2**20


def _write_atomic(path: Path, data: dict[str, object]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def gpu_uuid(index: int) -> str:
    """A stable UUID per GPU index, in nvidia-smi's `GPU-…` form."""
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"sglang-tui-sim-gpu-{index}"))


def write_devices(root: str, count: int) -> None:
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    gpus = [{"index": i, "uuid": gpu_uuid(i), "name": GPU_NAME, "total": TOTAL_BYTES} for i in range(count)]
    _write_atomic(path / "devices.json", {"gpus": gpus})


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def sweep_dead(root: str) -> None:
    """Remove entries left by processes that are gone (a previous run that was killed)."""
    for entry in Path(root).glob("proc-*.json"):
        try:
            pid = int(entry.stem.split("-", 1)[1])
        except ValueError:
            continue
        if not _alive(pid):
            entry.unlink(missing_ok=True)


class ProcMemory:
    """One process's entry; `set` records the new size, `flush` publishes it when it changed."""

    def __init__(self, root: str | None, gpu: int, name: str) -> None:
        self.path = Path(root) / f"proc-{os.getpid()}.json" if root else None
        self.start = start_ticks(os.getpid())
        self.gpu = gpu
        self.name = name
        self.used = 0
        self.published: int | None = None

    def set(self, gib: float) -> None:
        self.used = int(gib * GIB)

    def flush(self) -> None:
        if self.path is None or self.used == self.published:
            return
        data = {"pid": os.getpid(), "gpu": self.gpu, "used": self.used, "name": self.name, "start": self.start}
        try:
            _write_atomic(self.path, data)
            self.published = self.used
        except OSError:
            pass  # the directory was removed under us: nothing left to publish to

    def remove(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)
