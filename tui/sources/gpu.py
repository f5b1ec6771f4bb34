"""GPU snapshots from one long-lived probe on the host (the probe script sent over stdin to its Python).

The probe is restarted with backoff when it dies; every failure reaches the caller as a GpuSnapshot with
`error` set, never as an exception, so the UI shows why there are no GPU figures.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import AsyncGenerator
from pathlib import Path

from tui.core.events import GpuSnapshot
from tui.core.gpuparse import parse_probe_line
from tui.sources.bounded import within
from tui.sources.host import Host, HostAuthError, HostError

PROBE_PATH = Path(__file__).with_name("gpu_probe.py")
_BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)


def probe_script() -> bytes:
    """The probe's source, as sent on stdin."""
    return PROBE_PATH.read_bytes()


def probe_command(
    remote_python: str = "python3", *, interval: float = 1.0, sim_dir: str | None = None, count: int | None = None
) -> str:
    """`exec PYTHON -u - ARGS` (every word quoted; exec: no idle shell left above it): the script comes on stdin."""
    words = [remote_python, "-u", "-", "--interval", f"{interval:g}"]
    if sim_dir:
        words += ["--sim", sim_dir]
    if count is not None:
        words += ["--count", str(count)]
    return "exec " + " ".join(shlex.quote(w) for w in words)


def _last_line(data: bytes) -> str:
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


async def gpu_snapshots(
    host: Host, *, remote_python: str = "python3", interval: float = 1.0, sim_dir: str | None = None
) -> AsyncGenerator[GpuSnapshot, None]:
    """One GpuSnapshot per probe tick, forever (until the consumer stops iterating)."""
    command = probe_command(remote_python, interval=interval, sim_dir=sim_dir)
    script = probe_script()
    failures = 0
    while True:
        good = False
        last: GpuSnapshot | None = None
        try:
            proc = await host.start(command, input=script)
        except HostAuthError as exc:
            yield GpuSnapshot(source="probe", error=f"GPU probe not started: {exc}")
            return  # final: retrying cannot fix a refused key
        except HostError as exc:
            yield GpuSnapshot(source="probe", error=f"GPU probe not started: {exc}")
        else:
            try:
                pending = b""
                while True:
                    try:
                        chunk = await proc.read()
                    except HostError as exc:
                        yield GpuSnapshot(source="probe", error=f"GPU probe lost: {exc}")
                        break
                    if not chunk:
                        break
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        if line.strip():
                            last = parse_probe_line(line)
                            good = good or last.error is None
                            yield last
                if last is None or last.error is None:
                    # The probe's own last error line already says why; otherwise say how it ended.
                    status = await _exit_status(proc)
                    yield GpuSnapshot(source="probe", error=f"GPU probe exited ({status}); restarting")
            finally:
                await proc.close()
        failures = 0 if good else failures + 1
        await asyncio.sleep(_BACKOFF_S[min(failures, len(_BACKOFF_S) - 1)])


async def _exit_status(proc: object) -> str:
    """'status N: last stderr line' of a probe that stopped printing."""
    try:
        stderr = await within(proc.read_stderr(), 2.0)  # type: ignore[attr-defined]
        status = await within(proc.wait(), 2.0)  # type: ignore[attr-defined]
    except (asyncio.TimeoutError, HostError):
        return "no exit status"
    tail = _last_line(stderr)
    return f"status {status}" + (f": {tail}" if tail else "")
