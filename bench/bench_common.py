"""Shared pieces of the benchmark scripts (not a test): percentiles, markdown tables, a loopback sshd, CPU of a
process tree from /proc, RSS, and the simulator at ready.

Every benchmark prints a markdown section (a `###` title, a table, notes) so `bench/bench_all.py` can stamp them
(commit, date) and write them into bench/RESULTS.md as they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tui.commands.dependency_warnings import keep_dependency_warnings_out  # noqa: E402

keep_dependency_warnings_out()  # a bench's output is its section: no dependency's warnings in it (as the CLI)

from tests.helpers.sshd import Sshd, ssh_host  # noqa: E402,F401  (ssh_host: re-exported to the bench scripts)

CLK_TCK = os.sysconf("SC_CLK_TCK")
PY = sys.executable


# ------------------------------------------------------------------------------------------------ numbers


def pct(values: Sequence[float], p: float) -> float:
    """The p-th percentile (nearest rank) of values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def ms(seconds: float) -> str:
    return "n/a" if seconds != seconds else f"{seconds * 1000:.1f} ms"


def summary_ms(values: Sequence[float]) -> tuple[str, str, str, str]:
    """(p50, p99, mean, max) of seconds, printed as milliseconds."""
    if not values:
        return ("n/a",) * 4  # type: ignore[return-value]
    return ms(pct(values, 50)), ms(pct(values, 99)), ms(statistics.fmean(values)), ms(max(values))


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def section(title: str, table: str, notes: Sequence[str] = (), command: str = "") -> str:
    parts = [f"### {title}", "", table, ""]
    parts += [f"- {note}" for note in notes]
    if command:
        parts.append(f"- reproduce: `{command}`")
    return "\n".join(parts) + "\n"


# ------------------------------------------------------------------------------------------- processes


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()  # fields from index 0 = state (field 3 in proc(5))


def children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields is not None:
            kids.setdefault(int(fields[1]), []).append(int(entry))
    return kids


def tree_pids(root: int) -> list[int]:
    kids = children_map()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def tree_cpu_s(root: int) -> float:
    """CPU seconds of a process tree: utime+stime of every live process plus cutime+cstime (children it reaped).

    Processes that ended during a window are counted through their reaper's cutime, so end − start is the
    CPU the whole tree used in between (short-lived commands included).
    """
    total = 0
    for pid in tree_pids(root):
        fields = _stat_fields(pid)
        if fields is None:
            continue
        # proc(5): utime(14) stime(15) cutime(16) cstime(17) → indexes 11..14 here
        total += sum(int(x) for x in fields[11:15])
    return total / CLK_TCK


def process_cpu_s(pid: int) -> float:
    """CPU seconds of one process alone (utime + stime, not its children's), 0 when it is gone."""
    fields = _stat_fields(pid)
    return sum(int(x) for x in fields[11:13]) / CLK_TCK if fields is not None else 0.0


def self_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def rss_mib(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mib(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# ------------------------------------------------------------------------------------------------ sshd


@contextlib.contextmanager
def loopback_sshd() -> Iterator[Sshd]:
    """A real OpenSSH sshd on 127.0.0.1 in a temp dir (killed with its sessions at the end)."""
    with tempfile.TemporaryDirectory(prefix="bench-sshd-") as tmp:
        sshd = Sshd(Path(tmp)).start()
        try:
            yield sshd
        finally:
            sshd.kill()


def ssh_argv(sshd: Sshd, *, tty: bool = False) -> list[str]:
    """The system ssh client reaching this sshd through its config alias `testhost` (strict host keys)."""
    argv = ["ssh", "-F", str(sshd.ssh_config), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"]
    if tty:
        argv.append("-tt")
    return [*argv, "testhost"]


def default_of(func, name: str) -> object:  # type: ignore[no-untyped-def]
    """A keyword's default value in the code as it is now (so notes never state a stale setting)."""
    import inspect

    return inspect.signature(func).parameters[name].default


# -------------------------------------------------------------------------------------------------- sim


def wait_until(predicate, timeout: float, step: float = 0.01) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


async def async_wait_until(predicate, timeout: float, step: float = 0.005) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(step)
    return predicate()


FIRED_UP = b"The server is fired up and ready to roll!"


def sim_ready(tmp: Path, *, speed: float = 200.0, timeout: float = 60.0, **kw):  # type: ignore[no-untyped-def]
    """The simulator started and waited until its log says fired up (then /health answers 200)."""
    from tests.helpers.sim import start_sim

    existing = tmp / "sim.log"
    skip = existing.stat().st_size if existing.exists() else 0  # a log given beforehand may say fired up itself

    def fired_up() -> bool:
        if not sim.log.exists():
            return False
        with sim.log.open("rb") as f:
            f.seek(skip)
            return FIRED_UP in f.read()

    sim = start_sim(tmp, speed=speed, **kw)
    if not wait_until(fired_up, timeout, 0.05):
        sim.stop()
        raise RuntimeError(f"simulator did not reach ready in {timeout} s")
    return sim
