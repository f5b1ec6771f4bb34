"""Turn the GPU probe's JSON lines into GpuSnapshot events (pure: no IO).

The probe (tui/sources/gpu_probe.py) prints `{"t", "source", "gpus": [...]}` or `{"t", "source", "error"}`;
anything else becomes a snapshot with an error saying what was wrong, never an exception.
"""

from __future__ import annotations

import json
from typing import Any

from tui.core.events import GpuInfo, GpuProcess, GpuSnapshot
from tui.core.vocab import gpu_source


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _process(raw: Any) -> GpuProcess | None:
    if not isinstance(raw, dict) or _int(raw.get("pid")) is None:
        return None
    return GpuProcess(pid=int(raw["pid"]), used_bytes=_int(raw.get("used")), name=str(raw.get("name") or ""))


def _gpu(raw: Any) -> GpuInfo | None:
    if not isinstance(raw, dict) or _int(raw.get("index")) is None:
        return None
    listed = raw.get("procs")
    raw_procs = listed if isinstance(listed, list) else []
    procs = tuple(p for p in (_process(x) for x in raw_procs) if p)
    return GpuInfo(
        index=int(raw["index"]),
        uuid=str(raw.get("uuid") or ""),
        name=str(raw.get("name") or ""),
        used_bytes=_int(raw.get("used")),
        total_bytes=_int(raw.get("total")),
        reserved_bytes=_int(raw.get("reserved")),
        util_pct=_float(raw.get("util")),
        temp_c=_float(raw.get("temp")),
        power_w=_float(raw.get("power")),
        procs=procs,
    )


def parse_probe_line(line: str | bytes) -> GpuSnapshot:
    """One probe output line as a GpuSnapshot (error set when the probe reported one or the line is garbage)."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    try:
        data = json.loads(text)
    except ValueError:
        return GpuSnapshot(source="probe", error=f"GPU probe printed a non-JSON line: {text.strip()[:120]!r}")
    if not isinstance(data, dict):
        return GpuSnapshot(source="probe", error=f"GPU probe printed {type(data).__name__}, not an object")
    source = gpu_source(str(data.get("source") or "probe"))
    t = _float(data.get("t"))
    if data.get("error") is not None:
        return GpuSnapshot(source=source, error=str(data["error"]), t=t)
    gpus = data.get("gpus")
    if not isinstance(gpus, list):
        return GpuSnapshot(source=source, error="GPU probe line has no gpus list", t=t)
    parsed = sorted((g for g in (_gpu(x) for x in gpus) if g), key=lambda g: g.index)
    return GpuSnapshot(source=source, gpus=tuple(parsed), t=t)


def no_gpu_driver(snapshot: GpuSnapshot) -> bool:
    """True when the probe found no NVIDIA driver at all (no NVML library, no nvidia-smi): a GPU-less host."""
    return snapshot.source == "none" and (snapshot.error or "").startswith("no NVIDIA GPU driver on this host")


def memory_held(snapshot: GpuSnapshot, pids: set[int] | frozenset[int]) -> tuple[tuple[int, int, int], ...]:
    """(gpu index, pid, bytes) for every GPU process among `pids` (bytes 0 when the driver does not say)."""
    return tuple(
        (gpu.index, proc.pid, proc.used_bytes or 0) for gpu in snapshot.gpus for proc in gpu.procs if proc.pid in pids
    )
