"""tui.core.activity and the watch's activity block: what moves beyond the log is progress, said in the reason."""

from __future__ import annotations

from tui.core import activity
from tui.core.events import CompilerProc, HostActivity, Milestone, ProcCounters, ServerArgs, ServerProcess, Tick
from tui.core.ranklabels import ranks_span
from tui.core.readiness import reduce
from tui.core.state import Readiness
from tui.core.wording import verdict_line
from tui.sources.control_cmds import parse_activity

TITLES = {11: "sglang::scheduler_TP0", 12: "sglang::scheduler_TP1"}


def _sample(
    cpu: tuple[float, float], reads: tuple[int, int] = (0, 0), compilers: int = 0, download: int | None = None
) -> HostActivity:
    procs = tuple(ProcCounters(pid, 10, TITLES[pid], c, r) for pid, c, r in zip((11, 12), cpu, reads, strict=True))
    comps = tuple(
        CompilerProc(100 + i, 11, "nvcc", "/usr/local/cuda/bin/nvcc -c /root/.cache/flashinfer/x.cu")
        for i in range(compilers)
    )
    return HostActivity(procs, comps, download, 2 if download is not None else 0, "/hf/hub")


def _start(stall_after: float = 15.0) -> Readiness:
    s = Readiness.of(stall_after=stall_after)
    s = reduce(s, ServerArgs(model="m", tp_size=2), 0.0)
    return reduce(s, Milestone("graph_begin", rank="TP0"), 1.0)


def test_compilers_keep_a_silent_startup_from_stalling_and_are_named() -> None:
    s = _start()
    for t in range(2, 60, 2):
        s = reduce(s, ServerProcess(True, (11, 12), activity=_sample((1.0, 1.0), compilers=5)), float(t))
    assert s.stall is None
    assert "JIT compiling (FlashInfer): 5 compiler processes (nvcc)" in verdict_line(s)
    s = reduce(s, Tick(), 80.0)  # nothing more: the stall rule applies again
    assert s.stall is not None and verdict_line(s).startswith("stalled in CUDA graph capture")


def test_idle_ranks_do_not_count_and_busy_ones_do() -> None:
    s = _start()
    for t in range(2, 40, 2):
        s = reduce(s, ServerProcess(True, (11, 12), activity=_sample((1.0, 1.0))), float(t))
    assert s.stall is not None  # CPU never moved
    s = _start()
    for t in range(2, 40, 2):  # TP1 burns a core; TP0 reads 64 MiB every 2 s
        s = reduce(s, ServerProcess(True, (11, 12), activity=_sample((1.0, t * 1.0), (t << 25, 0))), float(t))
    assert s.stall is None and "TP0–1 working" in verdict_line(s)


def test_download_is_a_state_inside_loading_with_bytes_and_rate() -> None:
    s = reduce(Readiness.of(stall_after=15.0), ServerArgs(model="m", tp_size=2), 0.0)
    s = reduce(s, Milestone("load_begin", rank="TP0"), 1.0)
    for i, t in enumerate(range(2, 40, 2)):
        s = reduce(s, ServerProcess(True, (11, 12), activity=_sample((1.0, 1.0), download=i * (200 << 20))), float(t))
    assert s.stall is None
    assert activity.downloading(s.activity, 38.0)
    assert verdict_line(s).startswith("loading weights: downloading 3.5 GiB in 2 files, 100.0 MiB/s; 1/2 ranks began")


def test_ranks_span() -> None:
    assert ranks_span(["TP0", "TP1", "TP2", "TP4", "TP5", "TP7"]) == "TP0–2, TP4–5, TP7"


def test_nccl_rendezvous_names_the_rank_that_has_not_arrived() -> None:
    s = reduce(Readiness(), ServerArgs(model="m", tp_size=4), 0.0)
    for r in (0, 1, 2):
        s = reduce(s, Milestone("init_begin", rank=f"TP{r}"), 1.0)
    assert "NCCL rendezvous: TP0–2 wait at init; TP3 has not reached it" in verdict_line(s)


def test_parse_activity_block() -> None:
    text = (
        "A 100\nR 11 10 250 4096 sglang::schedul\nR 12 10 30 - sglang::schedul\n"
        "R 101 11 5 0 nvcc\nJ 101 11 nvcc /usr/local/cuda/bin/nvcc -c /x/deep_gemm/k.cu\n"
        "H 1073741824 3 /root/.cache/huggingface/hub\n"
    )
    a = parse_activity(text, TITLES)
    assert [(p.pid, p.name, p.cpu_s, p.read_bytes) for p in a.procs] == [
        (11, "sglang::scheduler_TP0", 2.5, 4096),
        (12, "sglang::scheduler_TP1", 0.3, None),
        (101, "nvcc", 0.05, 0),
    ]
    assert a.compilers == (CompilerProc(101, 11, "nvcc", "/usr/local/cuda/bin/nvcc -c /x/deep_gemm/k.cu"),)
    assert (a.download_bytes, a.download_files, a.cache_dir) == (1 << 30, 3, "/root/.cache/huggingface/hub")
    assert activity.compiler_kind([c.cmd for c in a.compilers]) == "DeepGEMM"


def test_the_log_names_the_jit_when_the_command_lines_do_not() -> None:
    from tui.core.logparse import LogParser

    line = (
        b"[2026-12-01 10:00:00 TP0] Entering DeepGEMM JIT Pre-Compile session. It may take a long time "
        b"(typically 10-20 mins) if you have not run `sglang.compile_deep_gemm`.\n"
    )
    s = _start()
    for ev in LogParser().feed(line * 3):
        s = reduce(s, ev, 2.0)
    assert s.jit_named == "DeepGEMM"
    plain = HostActivity((), (CompilerProc(9, 11, "nvcc", "nvcc -c /tmp/k.cu"),))
    s = reduce(s, ServerProcess(True, (11,), activity=plain), 4.0)
    assert "JIT compiling (DeepGEMM): 1 compiler process (nvcc)" in verdict_line(s)
