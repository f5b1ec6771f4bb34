"""Signals beyond the log (issue 13): what the server's processes do while the log is quiet.

Folds the process watch's HostActivity samples into ActivityState: compiler processes in the server's tree
(JIT: DeepGEMM, FlashInfer), per-rank CPU time and disk reads, and the growth of the HF cache's
`*.incomplete` blobs (a weight download). `moved` names what moved between two samples: the reducer counts
it as progress for the stall rule, and the reason says it. Pure: times are the reducer's `now`.
"""

from __future__ import annotations

from tui.core.events import HostActivity, ProcCounters
from tui.core.ranklabels import rank_of, ranks_span
from tui.core.record import Record, record

BUSY_CPU_FRACTION = 0.05  # a rank using 5% of a core or more between two samples is working
BUSY_READ_BYTES = 1 << 20  # a rank that read 1 MiB or more from disk between two samples is loading
FRESH_S = 12.0  # a sample older than this no longer describes what the server does now
_KINDS = (("deep_gemm", "DeepGEMM"), ("deepgemm", "DeepGEMM"), ("flashinfer", "FlashInfer"))


@record
class ActivityState(Record):
    at: float  # the reducer's clock at the last sample
    cpu: tuple[tuple[int, float], ...] = ()  # (pid, cpu seconds) at the last sample
    reads: tuple[tuple[int, int], ...] = ()  # (pid, read bytes) at the last sample
    compilers: int = 0  # compiler processes in the last sample
    compiler_kind: str | None = None  # "DeepGEMM" | "FlashInfer" | None: what the command lines (or log) name
    compiler_names: tuple[str, ...] = ()  # their short names, e.g. ("cicc", "nvcc", "ptxas")
    download_bytes: int | None = None  # total size of the *.incomplete blobs (None: none)
    download_files: int = 0
    download_rate: float | None = None  # bytes per second between the last two samples
    busy: tuple[str, ...] = ()  # ranks whose CPU or disk reads moved since the sample before
    moved: str = ""  # what moved since the sample before ("" when nothing did)
    cache_dir: str = ""
    procs: tuple[ProcCounters, ...] = ()  # the server's processes in the last sample (the process tree, key P)
    cpu_pct: tuple[tuple[int, float], ...] = ()  # (pid, % of one core) between the last two samples


def compiler_kind(texts: list[str]) -> str | None:
    """Which JIT the command lines name, if any."""
    for text in texts:
        low = text.lower()
        for needle, kind in _KINDS:
            if needle in low:
                return kind
    return None


def fold(prev: ActivityState | None, ev: HostActivity, now: float, named: str | None = None) -> ActivityState:
    """The activity after one sample; named: the JIT the log named, when the command lines do not."""
    dt = now - prev.at if prev is not None and now > prev.at else None
    old_cpu = dict(prev.cpu) if prev is not None else {}
    old_reads = dict(prev.reads) if prev is not None else {}
    busy: list[str] = []
    for p in ev.procs:
        rank = rank_of(p.name)
        if rank is None or dt is None:
            continue
        cpu = p.cpu_s is not None and p.pid in old_cpu and (p.cpu_s - old_cpu[p.pid]) >= BUSY_CPU_FRACTION * dt
        read = (p.read_bytes is not None and p.pid in old_reads
                and p.read_bytes - old_reads[p.pid] >= BUSY_READ_BYTES)  # fmt: skip
        if cpu or read:
            busy.append(rank)
    rate, changed = None, False
    if ev.download_bytes is not None:
        before = prev.download_bytes if prev is not None else None
        changed = (
            prev is None or before is None or (ev.download_bytes, ev.download_files) != (before, prev.download_files)
        )
        if before is not None and dt and ev.download_bytes > before:
            rate = (ev.download_bytes - before) / dt
        elif prev is not None:
            rate = prev.download_rate  # files finished (renamed) and new ones began: the total fell, the pace did not
    kind = compiler_kind([c.cmd for c in ev.compilers]) or (prev.compiler_kind if prev and ev.compilers else None)
    if kind is None and ev.compilers:
        kind = named
    state = ActivityState(
        at=now,
        cpu=tuple((p.pid, p.cpu_s) for p in ev.procs if p.cpu_s is not None),
        reads=tuple((p.pid, p.read_bytes) for p in ev.procs if p.read_bytes is not None),
        compilers=len(ev.compilers),
        compiler_kind=kind,
        compiler_names=tuple(sorted({c.name for c in ev.compilers if c.name})),
        download_bytes=ev.download_bytes,
        download_files=ev.download_files,
        download_rate=rate,
        busy=tuple(sorted(busy)),
        cache_dir=ev.cache_dir,
        procs=ev.procs,
        cpu_pct=tuple(
            (p.pid, 100.0 * (p.cpu_s - old_cpu[p.pid]) / dt)
            for p in ev.procs
            if dt and p.cpu_s is not None and p.pid in old_cpu
        ),
    )
    moved = [compiling_text(state)] if state.compilers else []
    if changed:
        moved.append("HF " + downloading_text(state))
    if busy:
        moved.append(busy_text(state))
    return ActivityState(**{**state.__dict__, "moved": "; ".join(moved)})


def compiling_text(a: ActivityState) -> str:
    """ "JIT compiling (FlashInfer): 5 compiler processes (nvcc, ptxas)"."""
    kind = f" ({a.compiler_kind})" if a.compiler_kind else ""
    names = f" ({', '.join(a.compiler_names)})" if a.compiler_names else ""
    return f"JIT compiling{kind}: {a.compilers} compiler process{'es' if a.compilers != 1 else ''}{names}"


def downloading_text(a: ActivityState) -> str:
    """ "downloading 1.2 GiB in 4 files, 96.0 MiB/s" (the *.incomplete blobs of the HF cache)."""
    rate = f", {fmt_bytes(a.download_rate)}/s" if a.download_rate is not None else ""
    files = f" in {a.download_files} file{'s' if a.download_files != 1 else ''}" if a.download_files else ""
    return f"downloading {fmt_bytes(a.download_bytes or 0)}{files}{rate}"


def busy_text(a: ActivityState) -> str:
    return f"{ranks_span(a.busy)} working (CPU or disk reads)"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "?"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def fresh(a: ActivityState | None, now: float) -> ActivityState | None:
    """The activity when its last sample still describes now, else None."""
    return a if a is not None and now - a.at <= FRESH_S else None


def downloading(a: ActivityState | None, now: float) -> bool:
    """The `downloading` state inside loading: *.incomplete blobs exist in the server's HF cache now."""
    a = fresh(a, now)
    return a is not None and a.download_bytes is not None
