"""SGLang's own py-spy dumps in the log (issue 13): `Pyspy dump for PID …` blocks, in the format of SGLang
0.5.23's cudacore_pyspy_dump_utils.pyspy_dump_schedulers (logger.error(f"Pyspy dump for PID {pid} ({cmd}):\\n
{result.stdout}")), parsed into WatchdogDump events, folded under their rank, never counted as error lines."""

from __future__ import annotations

from tui.core import stacks
from tui.core.events import Event, Failure, WatchdogDump
from tui.core.explain import evidence
from tui.core.logparse import LogParser
from tui.core.readiness import reduce
from tui.core.state import Readiness


def _pyspy(pid: int, rank: int, inner: str) -> str:
    """What py-spy 0.4 prints for a scheduler (with --native: native frames carry no line number)."""
    return (
        f"Process {pid}: sglang::scheduler_TP{rank}\n"
        "Python v3.12.3 (/usr/bin/python3.12)\n\n"
        f'Thread {pid} (idle): "MainThread"\n'
        f"    {inner}\n"
        "    c10d::ProcessGroupNCCL::WorkNCCL::synchronize (libtorch_cuda.so)\n"
        "    barrier (torch/distributed/distributed_c10d.py:4159)\n"
        "    event_loop_overlap (sglang/srt/managers/scheduler.py:1121)\n"
        "    run_scheduler_process (sglang/srt/managers/scheduler.py:3130)\n"
        f'Thread {pid + 7} (idle): "Thread-2 (_watchdog_thread)"\n'
        "    _watchdog_once (sglang/srt/utils/watchdog.py:147)\n\n"
    )


def _log() -> bytes:
    lines = [
        "[2026-12-01 10:00:00 TP0] Load weight end. elapsed=12.00 s, type=LlamaForCausalLM, avail mem=60.00 GB, mem usage=16.00 GB.\n"
    ]
    for r in range(4):
        inner = "ncclAllReduce (libnccl.so.2)" if r == 3 else "cudaStreamSynchronize (libcudart.so.12)"
        pid = 5000 + r
        lines.append(
            f"[2026-12-01 10:05:00 TP{r}] Pyspy dump for PID {pid} (py-spy dump --native --pid {pid}):\n"
            + _pyspy(pid, r, inner)
        )
        lines.append(
            f"[2026-12-01 10:05:01 TP{r}] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=True)\n"
        )
    lines.append("[2026-12-01 10:05:02] Pyspy failed (py-spy dump --native --pid 42). Error: Permission denied\n")
    return "".join(lines).encode()


def _events() -> list[Event]:
    parser = LogParser()
    data = _log()
    events = []
    for i in range(0, len(data), 333):  # chunks cut anywhere
        events += parser.feed(data[i : i + 333])
    return events + parser.flush()


def test_dumps_become_events_under_their_rank_and_are_not_errors() -> None:
    events = _events()
    dumps = [e for e in events if isinstance(e, WatchdogDump)]
    assert [(d.pid, d.rank) for d in dumps] == [(5000 + r, f"TP{r}") for r in range(4)]
    parsed = stacks.parse_pyspy(dumps[3].text)[0]
    assert parsed.cmdline == "sglang::scheduler_TP3"
    assert [f.text() for f in parsed.frames][:2] == [
        "ncclAllReduce (libnccl.so.2)",
        "c10d::ProcessGroupNCCL::WorkNCCL::synchronize (libtorch_cuda.so)",
    ]
    failures = [e for e in events if isinstance(e, Failure)]
    assert not any("Pyspy" in f.line or "Process 50" in f.line or "Thread" in f.line for f in failures), failures


def test_folded_per_rank_and_shown_like_dump() -> None:
    state = Readiness()
    for i, event in enumerate(_events()):
        state = reduce(state, event, float(i))
    assert [s.name for s in state.watchdog_stacks] == ["TP0", "TP1", "TP2", "TP3"]
    grouping = stacks.group(list(state.watchdog_stacks))
    assert grouping.odd == ("TP3",)
    assert any(
        e.startswith("log: SGLang's py-spy dump of 4 processes: TP3 is in ncclAllReduce") for e in evidence(state)
    ), evidence(state)
    assert state.error is None or "Pyspy" not in state.error.line
