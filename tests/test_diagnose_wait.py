"""Issue 13 end to end: the simulator's silent faults (jit-compile, download, hang-rank) watched by the real
`python -m tui wait` through LocalHost. What the host shows beyond the log keeps a working startup from
being called stalled, and says what it is doing; a hung rank still stalls."""

from __future__ import annotations

import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Sims, Spawner
from tests.helpers.sim import SimServer
from tui.commands.wait import HEARTBEAT_S

COMPILER_NAMES = {"nvcc", "cicc", "ptxas", "ninja"}
STALL_AFTER = 8.0  # s without progress on any signal: stalled
# The silent phases' real length: three times the stall limit, and past a progress line's heartbeat (an unchanged
# phase prints again after HEARTBEAT_S), so a line is printed during the silence and says what is going on.
SILENT_S = 3 * STALL_AFTER
assert SILENT_S > HEARTBEAT_S + 5


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    sim: SimServer
    compilers: dict[int, tuple[str, int]] = field(default_factory=dict)  # pid -> (comm, ppid) seen while waiting
    ranks: dict[int, str] = field(default_factory=dict)  # pid -> title of the sim's schedulers
    incomplete: set[str] = field(default_factory=set)  # *.incomplete blob names seen in the sim's HF cache


def _stat(pid: int) -> tuple[str, int, int] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = text[text.index("(") + 1 : text.rindex(")")]
    rest = text.rsplit(")", 1)[1].split()
    return comm, int(rest[1]), int(rest[2])  # comm, ppid, pgid


def _observe(run: Run, stop: threading.Event) -> None:
    """Poll /proc (and the sim's HF cache) while the wait runs: what the simulator really does."""
    cache = Path(str(run.sim.log) + ".hf-home") / "hub"
    while not stop.is_set():
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            got = _stat(int(entry.name))
            if got is None or got[2] != run.sim.pid:
                continue
            comm, ppid, _ = got
            if comm.startswith("sglang::schedul"):
                try:
                    run.ranks[int(entry.name)] = Path(f"/proc/{entry.name}/cmdline").read_text()
                except OSError:
                    pass
            elif comm in COMPILER_NAMES:
                run.compilers[int(entry.name)] = (comm, ppid)
        run.incomplete.update(p.name for p in cache.glob("*/blobs/*.incomplete"))
        time.sleep(0.2)


def wait_on(cli: Cli, sims: Sims, tmp_path: Path, fault: str, *extra: str, timeout: float = 150) -> Run:
    sim = sims(tmp_path, fault=fault, speed=50.0, tp=4, shards=8, extra=("--fault-seconds", f"{SILENT_S:g}"))
    run = Run(-1, "", "", sim)
    stop = threading.Event()
    watcher = threading.Thread(target=_observe, args=(run, stop), daemon=True)
    watcher.start()
    try:
        proc = cli("wait", "local", "--log", sim.log, "--port", str(sim.port), "--sim-gpus", sim.gpu_state,
                   "--timeout", str(timeout - 20), "--stall-after", f"{STALL_AFTER:g}", *extra, timeout=timeout,
                   env={"XDG_STATE_HOME": str(tmp_path / "state")})  # where --dump-on-stall saves  # fmt: skip
        run.code, run.stdout, run.stderr = proc.returncode, proc.stdout, proc.stderr
    finally:
        stop.set()
        watcher.join()
        sim.stop()
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, module_sim: Sims, module_spawn: Spawner) -> dict[str, Run]:
    """The three faults at once (each mostly waits on its silent phase)."""
    jobs = {
        "jit-compile": ("--json",),
        "download": (),
        "hang-rank": ("--dump-on-stall", "--remote-python", sys.executable),
    }
    cli = Cli(module_spawn)
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {f: pool.submit(wait_on, cli, module_sim, tmp_path_factory.mktemp(f), f, *args)
                   for f, args in jobs.items()}  # fmt: skip
        return {f: fut.result() for f, fut in futures.items()}


def _log_gaps(log: Path) -> list[float]:
    """Seconds between consecutive timestamped lines of the log."""
    pattern = rb"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)"
    stamps = [
        time.mktime(time.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M:%S"))
        for m in re.finditer(pattern, log.read_bytes(), re.M)
    ]
    return [b - a for a, b in zip(stamps, stamps[1:], strict=False)]


def test_jit_compile_is_ready_not_stalled_and_says_it_is_compiling(runs: dict[str, Run]) -> None:
    run = runs["jit-compile"]
    assert run.code == 0, run.stderr[-3000:]
    # The simulator really was silent for three times the stall limit, running compilers under a rank.
    assert max(_log_gaps(run.sim.log)) >= SILENT_S - 3
    names = {comm for comm, _ in run.compilers.values()}
    assert {"nvcc", "cicc", "ptxas"} <= names, run.compilers
    assert any(ppid in run.ranks for _, ppid in run.compilers.values()), (run.compilers, run.ranks)
    # During the silence the progress lines say why it is not stalled.
    compiling = [line for line in run.stderr.splitlines() if "JIT compiling" in line]
    assert compiling, run.stderr[-3000:]
    assert any("FlashInfer" in line and "compiler process" in line for line in compiling), compiling
    assert run.stdout.strip(), "wait --json printed no state"


def test_download_shows_bytes_and_rate_and_no_stall(runs: dict[str, Run]) -> None:
    run = runs["download"]
    assert run.code == 0, run.stderr[-3000:]
    assert run.incomplete, "the simulator grew no *.incomplete blob in its HF cache"
    # "loading weights: downloading …", or "loading weights: 0/8 shards; HF downloading …" when the first look at
    # the phase came after the shard bar began (a loaded machine): the bytes and the rate either way
    lines = [line for line in run.stderr.splitlines() if "loading weights: " in line and "downloading" in line]
    assert lines, run.stderr[-3000:]
    assert any(re.search(r"downloading [\d.]+ [KMG]iB in \d+ files?, [\d.]+ [KMG]iB/s", line) for line in lines), lines
    assert all("loading_weights" in line for line in lines if line.startswith("[")), lines


def test_hang_rank_still_stalls(runs: dict[str, Run]) -> None:
    run = runs["hang-rank"]
    assert run.code == 3, run.stderr[-3000:]
    assert "stalled in CUDA graph capture" in run.stderr
    # --dump-on-stall: py-spy of every process, the odd rank named, the file it went to named
    assert "sglang-tui wait: dump: TP3 is in all_reduce" in run.stderr, run.stderr[-3000:]
    saved = [line.split("dump saved to ", 1)[1] for line in run.stderr.splitlines() if "dump saved to " in line]
    assert saved and "Rank.all_reduce" in Path(saved[0]).read_text()
