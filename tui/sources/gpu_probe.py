"""The GPU probe: a standalone script that prints one JSON line of GPU state per tick.

It is sent over SSH stdin to the host's interpreter (`python3 -u - --interval 1`) or run locally, so it
uses only the standard library plus `pynvml` (nvidia-ml-py) when importable; it is also importable, and
its pure helpers (CSV parsing, line building) are tested directly. Backends in order: NVML, one
long-lived `nvidia-smi -lms` pair of queries, and the simulator's GPU state when `--sim DIR` is given.
It exits when its output channel closes (EPIPE) or its parent goes away, so no probe outlives its reader.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

MIB = 1024 * 1024

# nvidia-smi fallback: the fields asked for, in order (memory.reserved is dropped on drivers without it).
SMI_GPU_FIELDS = (
    "index",
    "uuid",
    "name",
    "memory.used",
    "memory.total",
    "memory.reserved",
    "utilization.gpu",
    "temperature.gpu",
    "power.draw",
)
SMI_APP_FIELDS = ("timestamp", "pid", "gpu_uuid", "used_memory", "process_name")
# The error a GPU-less host gets (no NVML library, no driver, no nvidia-smi): it holds no GPU memory.
NO_DRIVER = "no NVIDIA GPU driver on this host"


class ProbeError(Exception):
    """A backend cannot read the GPUs; str() is the one line reported. absent: no driver/tool at all."""

    def __init__(self, message: str, absent: bool = False) -> None:
        super().__init__(message)
        self.absent = absent


class ChannelClosed(Exception):
    """Our reader went away: stop."""


# ------------------------------------------------------------------------------------------ pure helpers


def smi_value(text: str) -> str | None:
    """One nvidia-smi CSV cell, or None for `[N/A]`, `[Not Supported]`, `N/A` and other bracketed markers."""
    value = text.strip()
    if not value or value.upper() in ("N/A", "NOT SUPPORTED") or (value.startswith("[") and value.endswith("]")):
        return None
    return value


def smi_number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return None


def _mib(text: str | None) -> int | None:
    number = smi_number(text)
    return None if number is None else int(number * MIB)


def _int(text: str | None) -> int | None:
    number = smi_number(text)
    return None if number is None else int(number)


def split_csv(line: str, width: int) -> list[str | None]:
    """Split one `--format=csv,noheader,nounits` line into `width` cells (missing cells are None).

    The last field may itself contain commas (a process name), so the line is split at most width-1 times."""
    cells: list[str | None] = [smi_value(cell) for cell in line.rstrip("\r\n").split(",", width - 1)]
    return cells + [None] * (width - len(cells))


def parse_smi_gpu_line(line: str, fields: tuple[str, ...] = SMI_GPU_FIELDS) -> dict[str, Any] | None:
    """A `--query-gpu` line (fields as given) as a probe GPU dict in bytes/W/°C/%, or None when it is no GPU line."""
    if not line.strip() or "," not in line:
        return None
    row = dict(zip(fields, split_csv(line, len(fields)), strict=True))
    index = _int(row.get("index"))
    if index is None:
        return None
    return {
        "index": index,
        "uuid": row.get("uuid") or "",
        "name": row.get("name") or "",
        "used": _mib(row.get("memory.used")),
        "total": _mib(row.get("memory.total")),
        "reserved": _mib(row.get("memory.reserved")),
        "util": smi_number(row.get("utilization.gpu")),
        "temp": smi_number(row.get("temperature.gpu")),
        "power": smi_number(row.get("power.draw")),
        "procs": [],
    }


def parse_smi_app_line(line: str, fields: tuple[str, ...] = SMI_APP_FIELDS) -> dict[str, Any] | None:
    """A `--query-compute-apps` line as {"pid", "gpu_uuid", "used", "name", "timestamp"}, or None."""
    if not line.strip() or "," not in line:
        return None
    row = dict(zip(fields, split_csv(line, len(fields)), strict=True))
    pid = _int(row.get("pid"))
    if pid is None:
        return None
    return {
        "pid": pid,
        "gpu_uuid": row.get("gpu_uuid") or "",
        "used": _mib(row.get("used_memory")),
        "name": row.get("process_name") or "",
        "timestamp": row.get("timestamp") or "",
    }


def attach_procs(gpus: list[dict[str, Any]], apps: list[dict[str, Any]], name_of: Callable[[int], str]) -> None:
    """Put each compute app under its GPU (matched by UUID), naming it from /proc when we can."""
    by_uuid = {gpu["uuid"]: gpu for gpu in gpus}
    for app in apps:
        gpu = by_uuid.get(app["gpu_uuid"])
        if gpu is not None:
            gpu["procs"].append({"pid": app["pid"], "used": app["used"], "name": name_of(app["pid"]) or app["name"]})


def process_name(pid: int) -> str:
    """The process title (`sglang::scheduler_TP3` survives in cmdline, not in the 15-char comm), else comm."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(4096)
        name = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
        if name:
            return name
        with open(f"/proc/{pid}/comm", "rb") as f:
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""  # another PID namespace (containers) or already gone


def pid_alive(pid: int, start: int | None = None) -> bool:
    """True when the process exists and is not a zombie (a zombie holds no GPU memory), and, with `start`, is the
    process that started then (clock ticks since boot), not a later one given the same pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    fields = stat[stat.rfind(b")") + 2 :].split()
    if not fields or fields[0] in (b"Z", b"X"):
        return False
    return start is None or (len(fields) > 19 and fields[19] == str(start).encode())


def tick_line(source: str, gpus: list[dict[str, Any]] | None = None, error: str | None = None) -> str:
    """One output line: {"t", "source", "gpus"} or {"t", "source", "error"}."""
    payload: dict[str, Any] = {"t": round(time.time(), 3), "source": source}
    if error is not None:
        payload["error"] = error
    else:
        payload["gpus"] = gpus or []
    return json.dumps(payload, separators=(",", ":"))


# ------------------------------------------------------------------------------------------------ backends


class NvmlBackend:
    """NVML through pynvml: ~10 µs a read, so one call set per tick is nearly free."""

    source = "nvml"

    def __init__(self) -> None:
        try:
            import pynvml  # noqa: PLC0415 (optional on the host)
        except ImportError as exc:
            raise ProbeError(f"pynvml not importable ({exc})", absent=True) from None
        self.nv = pynvml
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except pynvml.NVMLError as exc:
            absent = type(exc).__name__ in ("NVMLError_LibraryNotFound", "NVMLError_DriverNotLoaded")
            raise ProbeError(f"NVML: {exc}", absent=absent) from None
        self.static = [self._static(i, h) for i, h in enumerate(self.handles)]

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One NVML call; None when this GPU does not support it (per-field NotSupported)."""
        try:
            return fn(*args, **kwargs)
        except (self.nv.NVMLError, AttributeError, TypeError):
            return None

    def _static(self, index: int, handle: Any) -> dict[str, Any]:
        def text(value: Any) -> str:
            return value.decode() if isinstance(value, bytes) else str(value or "")

        return {
            "index": index,
            "uuid": text(self._call(self.nv.nvmlDeviceGetUUID, handle)),
            "name": text(self._call(self.nv.nvmlDeviceGetName, handle)),
        }

    def _memory(self, handle: Any) -> tuple[int | None, int | None, int | None]:
        """(used, total, reserved): v2 matches nvidia-smi (reserved excluded from used); v1 has no reserved."""
        version = getattr(self.nv, "nvmlMemory_v2", None)
        if version is not None:
            mem = self._call(self.nv.nvmlDeviceGetMemoryInfo, handle, version=version)
            if mem is not None:
                return int(mem.used), int(mem.total), int(getattr(mem, "reserved", 0))
        mem = self._call(self.nv.nvmlDeviceGetMemoryInfo, handle)
        return (None, None, None) if mem is None else (int(mem.used), int(mem.total), None)

    def _temperature(self, handle: Any) -> float | None:
        sensor = getattr(self.nv, "NVML_TEMPERATURE_GPU", 0)
        if hasattr(self.nv, "nvmlDeviceGetTemperatureV"):
            value = self._call(self.nv.nvmlDeviceGetTemperatureV, handle, sensor)
            if value is not None:
                return float(value)
        value = self._call(self.nv.nvmlDeviceGetTemperature, handle, sensor)
        return None if value is None else float(value)

    def _procs(self, handle: Any) -> list[dict[str, Any]]:
        procs = self._call(self.nv.nvmlDeviceGetComputeRunningProcesses, handle) or []
        return [
            {
                "pid": int(p.pid),
                "used": None if p.usedGpuMemory is None else int(p.usedGpuMemory),
                "name": process_name(int(p.pid)),
            }
            for p in procs
        ]

    def read(self) -> list[dict[str, Any]]:
        gpus = []
        for static, handle in zip(self.static, self.handles, strict=True):
            used, total, reserved = self._memory(handle)
            util = self._call(self.nv.nvmlDeviceGetUtilizationRates, handle)
            power_mw = self._call(self.nv.nvmlDeviceGetPowerUsage, handle)
            gpus.append(
                {
                    **static,
                    "used": used,
                    "total": total,
                    "reserved": reserved,
                    "util": None if util is None else float(util.gpu),
                    "temp": self._temperature(handle),
                    "power": None if power_mw is None else power_mw / 1000.0,
                    "procs": self._procs(handle),
                }
            )
        return gpus

    def close(self) -> None:
        self._call(self.nv.nvmlShutdown)


def _reader(stream: Any, sink: queue.Queue[tuple[float, str | None]]) -> None:
    """Copy a child's stdout lines into a queue (None at EOF), stamped with their arrival time."""
    for raw in iter(stream.readline, b""):
        sink.put((time.monotonic(), raw.decode("utf-8", "replace")))
    sink.put((time.monotonic(), None))


class SmiBackend:
    """Two long-lived `nvidia-smi … -lms N` processes (GPUs and compute apps), never one spawn per tick."""

    source = "nvidia-smi"

    def __init__(self, interval: float, smi: str = "nvidia-smi") -> None:
        self.interval = interval
        self.smi = smi
        self.gpu_fields: tuple[str, ...] = SMI_GPU_FIELDS
        self.children: list[subprocess.Popen[bytes]] = []
        self.gpu_lines: queue.Queue[tuple[float, str | None]] = queue.Queue()
        self.app_lines: queue.Queue[tuple[float, str | None]] = queue.Queue()
        self.apps: list[dict[str, Any]] = []
        self.apps_at = 0.0
        self._start()

    def _spawn(self, query: str, fields: tuple[str, ...], sink: queue.Queue[tuple[float, str | None]]) -> None:
        argv = [
            self.smi,
            f"--query-{query}={','.join(fields)}",
            "--format=csv,noheader,nounits",
            f"-lms={max(int(self.interval * 1000), 100)}",
        ]
        try:
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except OSError as exc:
            raise ProbeError(f"nvidia-smi: {exc.strerror or exc}", absent=isinstance(exc, FileNotFoundError)) from None
        self.children.append(child)
        threading.Thread(target=_reader, args=(child.stdout, sink), daemon=True).start()

    def _start(self) -> None:
        self._spawn("gpu", self.gpu_fields, self.gpu_lines)
        first = self._first_line()
        if first is not None and "memory.reserved" in first and "memory.reserved" in self.gpu_fields:
            # Older drivers do not know memory.reserved: ask again without it.
            self.close()
            self.gpu_fields = tuple(f for f in SMI_GPU_FIELDS if f != "memory.reserved")
            self.gpu_lines = queue.Queue()
            self._spawn("gpu", self.gpu_fields, self.gpu_lines)
            first = self._first_line()
        if first is not None and parse_smi_gpu_line(first, self.gpu_fields) is None:
            self.close()
            raise ProbeError(f"nvidia-smi: {first.strip()}")
        self.pending = [] if first is None else [first]
        self._spawn("compute-apps", SMI_APP_FIELDS, self.app_lines)

    def _first_line(self) -> str | None:
        try:
            _, line = self.gpu_lines.get(timeout=15.0)
        except queue.Empty:
            raise ProbeError("nvidia-smi printed nothing for 15 s") from None
        if line is None:
            self.children[-1].wait()
            raise ProbeError(f"nvidia-smi exited with status {self.children[-1].returncode}")
        return line

    def _drain_apps(self) -> None:
        """Keep the latest burst of compute-app lines: lines more than half an interval apart start a new tick."""
        while True:
            try:
                at, line = self.app_lines.get_nowait()
            except queue.Empty:
                return
            if line is None:
                raise ProbeError("nvidia-smi (compute apps) exited")
            app = parse_smi_app_line(line)
            if app is None:
                continue
            if at - self.apps_at > self.interval / 2:
                self.apps = []
            self.apps.append(app)
            self.apps_at = at

    def read(self) -> list[dict[str, Any]]:
        """Wait for the next tick's GPU lines: a tick ends when an index repeats or the burst goes quiet."""
        gpus = [g for g in (parse_smi_gpu_line(line, self.gpu_fields) for line in self.pending) if g]
        self.pending = []
        quiet = max(self.interval / 4, 0.05)
        while True:
            try:
                _, line = self.gpu_lines.get(timeout=quiet if gpus else self.interval * 3 + 5)
            except queue.Empty:
                if gpus:
                    break
                raise ProbeError("nvidia-smi stopped printing") from None
            if line is None:
                raise ProbeError("nvidia-smi exited")
            gpu = parse_smi_gpu_line(line, self.gpu_fields)
            if gpu is None:
                continue
            if any(g["index"] == gpu["index"] for g in gpus):
                self.pending = [line]
                break
            gpus.append(gpu)
        self._drain_apps()
        # No app line for more than an interval and a half means no compute app now (nvidia-smi prints nothing).
        apps = self.apps if time.monotonic() - self.apps_at <= self.interval * 1.5 + 0.2 else []
        attach_procs(gpus, apps, process_name)
        return gpus

    def close(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.kill()
                child.wait()
        self.children = []


class SimBackend:
    """The simulator's GPU state: DIR/devices.json plus one DIR/proc-<pid>.json per process holding memory.

    A GPU's used memory is the sum over entries whose pid is alive and not a zombie (and, where the entry says its
    start time, still that process: a pid is reused), as a driver frees memory when a process dies (even by
    SIGKILL)."""

    source = "sim"

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(os.path.join(self.directory, "devices.json"), encoding="utf-8") as f:
                devices = json.load(f)["gpus"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ProbeError(f"simulated GPU state unreadable in {self.directory}: {exc}") from None
        gpus = {
            int(d["index"]): {
                "index": int(d["index"]),
                "uuid": d.get("uuid", ""),
                "name": d.get("name", ""),
                "used": 0,
                "total": d.get("total"),
                "reserved": 0,
                "util": None,
                "temp": None,
                "power": None,
                "procs": [],
            }
            for d in devices
        }
        for path in sorted(glob.glob(os.path.join(glob.escape(self.directory), "proc-*.json"))):
            try:
                with open(path, encoding="utf-8") as f:
                    entry = json.load(f)
                pid, gpu, used = int(entry["pid"]), int(entry["gpu"]), int(entry["used"])
            except (OSError, ValueError, KeyError, TypeError):
                continue  # removed or replaced between listing and reading
            start = entry.get("start")
            if gpu in gpus and pid_alive(pid, int(start) if isinstance(start, int) else None):
                gpus[gpu]["used"] += used
                gpus[gpu]["procs"].append({"pid": pid, "used": used, "name": entry.get("name") or process_name(pid)})
        return [gpus[i] for i in sorted(gpus)]

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------------- main


def open_backend(args: argparse.Namespace, emit: Callable[[str], None]) -> Any:
    """The first backend that works, in order; each failure is reported as an error line."""
    if args.sim:
        return SimBackend(args.sim)
    failures: list[ProbeError] = []
    if args.backend in ("auto", "nvml"):
        try:
            return NvmlBackend()
        except ProbeError as exc:
            failures.append(exc)
            emit(tick_line("nvml", error=str(exc)))
    if args.backend in ("auto", "nvidia-smi"):
        try:
            return SmiBackend(args.interval, args.smi)
        except ProbeError as exc:
            failures.append(exc)
            emit(tick_line("nvidia-smi", error=str(exc)))
    detail = "; ".join(str(f) for f in failures)
    if all(f.absent for f in failures):
        raise ProbeError(f"{NO_DRIVER}: {detail}", absent=True)
    raise ProbeError(f"no GPU backend works: {detail}")


def make_emit(out: Any) -> Callable[[str], None]:
    """Write one line; a closed channel (EPIPE, or the parent gone) becomes ChannelClosed."""
    parent = os.getppid()

    def emit(line: str) -> None:
        if os.getppid() != parent:
            raise ChannelClosed()  # re-parented: whoever started us is gone
        try:
            out.write(line + "\n")
            out.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError, OSError):
            raise ChannelClosed() from None

    return emit


def ticks(interval: float, count: int | None) -> Iterator[int]:
    """Tick numbers, sleeping so that ticks keep a steady cadence."""
    start = time.monotonic()
    n = 0
    while count is None or n < count:
        yield n
        n += 1
        time.sleep(max(0.0, start + n * interval - time.monotonic()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_probe", description="print one JSON line of GPU state per tick")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between ticks")
    parser.add_argument("--count", type=int, help="stop after N ticks (default: until the reader goes away)")
    parser.add_argument("--sim", metavar="DIR", help="read the simulator's GPU state from DIR")
    parser.add_argument("--backend", choices=("auto", "nvml", "nvidia-smi"), default="auto")
    parser.add_argument("--smi", default="nvidia-smi", help="the nvidia-smi binary")
    args = parser.parse_args(argv)
    emit = make_emit(sys.stdout)
    backend = None
    try:
        try:
            backend = open_backend(args, emit)
        except ProbeError as exc:
            emit(tick_line("none", error=str(exc)))
            return 3
        smi_paced = isinstance(backend, SmiBackend)  # nvidia-smi -lms sets the pace itself
        for _ in ticks(0.0 if smi_paced else args.interval, args.count):
            try:
                emit(tick_line(backend.source, backend.read()))
            except ProbeError as exc:
                emit(tick_line(backend.source, error=str(exc)))
                if smi_paced:
                    return 2  # nvidia-smi died: let the reader restart the probe
        return 0
    except (ChannelClosed, KeyboardInterrupt):
        # Nobody reads us any more; keep the interpreter from complaining about a broken stdout at exit.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 0
    finally:
        if backend is not None:
            backend.close()


if __name__ == "__main__":
    sys.exit(main())
