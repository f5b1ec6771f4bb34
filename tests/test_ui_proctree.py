"""The process tree popup (key P): main → schedulers → detokenizer with PID, state, CPU, RSS and GPU memory."""

from __future__ import annotations

import subprocess
import sys

from textual.widgets import Static

from tests.helpers.processes import Spawner
from tests.helpers.ui_fakes import T0, FakeBatchSource, FakeClock, Step, gpus, make_app, play
from tui.core import proctree
from tui.core.events import HostActivity, ProcCounters, ServerProcess
from tui.sources.control_cmds import parse_activity, watch_activity_funcs
from tui.ui.screens.proctree import ProcTreeScreen

MIB = 1 << 20


def _sample(cpu: float) -> HostActivity:
    return HostActivity(
        (
            ProcCounters(4200, 1, "python3 -m sglang.launch_server", cpu, 0, "S", 900 * MIB),
            ProcCounters(4301, 4200, "sglang::scheduler_TP1", cpu * 4, 0, "R", 3000 * MIB),
            ProcCounters(4300, 4200, "sglang::scheduler_TP0", cpu * 4, 0, "R", 3100 * MIB),
            ProcCounters(4400, 4200, "sglang::detokenizer", cpu, 0, "S", 400 * MIB),
        )
    )


def test_the_tree_puts_parents_first_and_sums_gpu_memory_per_pid() -> None:
    from tui.core.activity import fold

    a = fold(fold(None, _sample(1.0), 10.0), _sample(2.0), 12.0)
    tree = proctree.rows(a, gpus([10.0, 12.0], n=2).gpus)
    assert [(r.depth, r.pid) for r in tree] == [(0, 4200), (1, 4300), (1, 4301), (1, 4400)]
    tp0 = tree[1]
    assert (tp0.state, tp0.rss_bytes, tp0.gpu_bytes) == ("R", 3100 * MIB, 10 * (1 << 30))
    assert tp0.cpu_pct == 200.0  # 4 s more CPU in 2 s: two cores
    assert tree[3].gpu_bytes is None and tree[0].cpu_pct == 50.0


def test_the_watch_awk_sends_state_and_rss_of_a_real_process(spawn: Spawner) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        script = watch_activity_funcs() + f"\nknown='{child.pid}:0'; act\n"
        out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30).stdout
        a = parse_activity(out)
        me = [p for p in a.procs if p.pid == child.pid]
        assert me and me[0].state in ("S", "R") and me[0].rss_bytes is not None and me[0].rss_bytes > 1 * MIB
    finally:
        child.kill()
        child.wait()


def test_parse_activity_reads_the_old_r_lines_too() -> None:
    a = parse_activity("A 100\nR 11 10 250 4096 sglang::schedul\n")
    assert (a.procs[0].name, a.procs[0].state, a.procs[0].rss_bytes) == ("sglang::schedul", "", None)
    a = parse_activity("A 100 8192\nR 11 10 250 4096 sglang::schedul S 10\n")
    assert (a.procs[0].state, a.procs[0].rss_bytes) == ("S", 10 * 8192)


async def test_p_opens_the_process_tree_and_escape_closes_it() -> None:
    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, clock=clock)
    async with app.run_test(size=(140, 40)) as pilot:
        steps = [
            Step(T0 + 1, [ServerProcess(alive=True, pids=(4200,), activity=_sample(1.0)), gpus([10.0, 12.0], n=2)]),
            Step(T0 + 3, [ServerProcess(alive=True, pids=(4200,), activity=_sample(2.0))]),
        ]
        await play(pilot, source, clock, steps)
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, ProcTreeScreen)
        text = str(app.screen.query_one("#proctree-lines", Static).render())
        lines = text.splitlines()
        assert "PID" in lines[0] and "GPU MEM" in lines[0]
        assert [ln.split()[0] for ln in lines[1:]] == ["4200", "4300", "4301", "4400"]
        assert "└─ sglang::scheduler_TP0" in lines[2] and "10.0 GiB" in lines[2] and "3.0 GiB" in lines[2]
        assert "running" in lines[2] and "200" in lines[2]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ProcTreeScreen)
