"""Pilot tests of the figures that misled (issue 21, item 4): free memory said as free, the failed rank marked in
the ranks grid and the GPU pane, one capture count in the header and the pane, each draft capture named once.
Scenes are log text through the real parser (SceneLog) and the real reducer."""

from __future__ import annotations

import re
from typing import get_args

from tests.helpers.ui_fakes import (
    T0,
    TP,
    FakeBatchSource,
    FakeClock,
    SceneLog,
    Step,
    at,
    gpus,
    make_app,
    play,
    startup_failed_oom,
    startup_to_capture,
    startup_to_loading,
)
from tui.core.vocab import MilestoneKind
from tui.ui.labels import MILESTONE_SHORT
from tui.ui.panes.gpus import GpuPane
from tui.ui.panes.header import HeaderPane
from tui.ui.panes.shards import ShardsPane
from tui.ui.panes.timeline import TimelinePane

SIZE = (120, 40)


def test_every_milestone_a_rank_prints_has_a_short_word() -> None:
    """A kind without one showed its id in the ranks grid ("TP0 jit_kernel")."""
    assert [kind for kind in get_args(MilestoneKind) if kind not in MILESTONE_SHORT] == []


def _every_rank(seconds: float, text: str) -> list[str]:
    return [f"[{at(seconds)[0]} TP{i}] {text}" for i in range(TP)]


async def test_the_ranks_grid_says_free_memory_is_free() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_loading(57))
        shards = app.query_one(ShardsPane).shown
        # each rank's `Load weight begin. avail mem=138.05 GB`, next to GPUs that use 16 GiB: said as free
        assert len(re.findall(r"TP\d load… +138G free", shards)) == TP, shards
        assert not re.search(r"138\.\dG(?! free)", shards)


async def test_the_failed_rank_is_marked_in_the_grid_and_the_gpu_pane() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_failed_oom())  # TP3's scheduler hit the OOM
        assert app.state.error is not None and app.state.error.rank == "TP3"
        shards = app.query_one(ShardsPane)
        assert re.search(r"TP3 failed", shards.shown), shards.shown
        assert "graph…" not in shards.shown  # no rank reads as still capturing
        drawn = shards._drawn
        assert drawn is not None
        failed = [span for span in drawn.spans if drawn.plain[span.start : span.end].strip() == "failed"]
        assert failed and all("red" in str(span.style) for span in failed)
        table = app.query_one(GpuPane)
        cell = table.get_row("gpu3")[1]
        assert cell.plain == "TP3 ✗" and "red" in str(cell.style)
        assert [table.get_row(f"gpu{i}")[1].plain for i in (0, 2, 7)] == ["TP0", "TP2", "TP7"]
        await pilot.press("C")  # the report for a bug report says it too
        assert "### Root cause: ✗ OUT OF MEMORY (out of memory) on TP3" in app.clipboard


async def test_the_failed_rank_is_marked_on_a_short_terminal() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await play(pilot, source, clock, startup_failed_oom())
        assert "TP0–2 graph  TP3 failed  TP4–7 graph" in app.query_one(ShardsPane).shown


def _piecewise(log: SceneLog) -> list[Step]:
    """The regular capture done (36/36), then a piecewise CUDA graph capture at 5/12 token sizes."""
    steps = startup_to_capture(36, 36, log=log)
    end = "Capture cuda graph end. Time elapsed: 31.00 s. mem usage=3.64 GB. avail mem=22.10 GB."
    steps.append(Step(T0 + 60, log.write(*_every_rank(60, end))))
    begin = "Capture piecewise CUDA graph begin. avail mem=22.00 GB"
    steps.append(Step(T0 + 61, [*log.write(*_every_rank(61, begin)), gpus(115.5)]))
    frames = "\r  0%|          | 0/12 [00:00<?, ?it/s]" + "".join(
        f"\rCapturing num tokens (num_tokens={8192 >> i} avail_mem=21.90 GB): {100 * i // 12:3d}%|###  | {i}/12 "
        f"[00:0{i}<00:07,  1.00it/s]"
        for i in range(1, 6)
    )
    steps.append(Step(T0 + 66, log.write(frames)))
    return steps


async def test_header_and_pane_show_the_same_capture_count() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        log = SceneLog()
        steps = _piecewise(log)
        await play(pilot, source, clock, steps[:-1])  # piecewise begun, its bar not drawn yet
        header, shards = app.query_one(HeaderPane).shown, app.query_one(ShardsPane).shown
        assert "capturing piecewise CUDA graph: 8/8 ranks began" in header
        assert re.search(r"graphs +·+ +waiting +piecewise", shards) and "36/36" not in shards, shards
        await play(pilot, source, clock, steps[-1:])
        header, shards = app.query_one(HeaderPane).shown, app.query_one(ShardsPane).shown
        assert "capturing piecewise CUDA graph: 5/12 token sizes" in header
        assert "log: capture 36/36" not in header
        assert re.search(r"graphs +\S+ +5/12 .*piecewise", shards, re.S) and "36/36" not in shards, shards


async def test_the_timeline_names_each_draft_capture_once() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    log = SceneLog()
    steps = startup_to_capture(36, 36, log=log)
    lines = [
        *_every_rank(60, "Capture cuda graph end. Time elapsed: 31.00 s. mem usage=3.64 GB. avail mem=22.10 GB."),
        *_every_rank(61, "Capture draft cuda graph begin. This can take up to several minutes. avail mem=22.26 GB"),
        *_every_rank(69, "Capture draft cuda graph end. Time elapsed: 7.91 s. mem usage=0.43 GB. avail mem=21.80 GB."),
        *_every_rank(69, "Capture draft extend cuda graph begin. This can take up to several minutes. avail mem=21.80 GB"),
        *_every_rank(74, "Capture draft extend cuda graph end. Time elapsed: 5.13 s. mem usage=0.30 GB. avail mem=21.50 GB."),
    ]  # fmt: skip
    steps.append(Step(T0 + 75, log.write(*lines)))
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, steps)
        timeline = app.query_one(TimelinePane).shown
        assert timeline.count("draft CUDA graphs") == 1 and timeline.count("draft extend graphs") == 1, timeline
        assert re.search(r"draft CUDA graphs +8\.0s", timeline) and re.search(r"draft extend graphs +5\.0s", timeline)
