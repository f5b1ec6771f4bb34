"""The GPU pane maximized: memory and utilisation over time per GPU with labelled axes, drawn once per sample;
temperature and power columns where the probe has them. Real app and reducer over a scripted source."""

from __future__ import annotations

from tests.helpers.ui_fakes import T0, FakeBatchSource, FakeClock, Step, gpus, make_app, play
from tui.core.readiness import reduce
from tui.core.state import Readiness
from tui.ui.chart import Series, chart
from tui.ui.panes.gpu_chart import GpuChart
from tui.ui.panes.gpus import COLUMNS, GpuPane


def test_chart_has_a_labelled_y_axis_a_time_axis_and_the_newest_point_at_the_right() -> None:
    lines = [line.plain for line in chart([Series("0", (0.0, 40.0, 80.0))], (0.0, 30.0, 60.0), width=40, height=5,
                                          lo=0.0, hi=80.0, label=lambda v: f"{v:.0f} GiB", title="memory")]  # fmt: skip
    assert lines[0] == "memory"
    assert lines[1].startswith("80 GiB ┤") and lines[1].rstrip().endswith("0")  # 80 GiB now: top row, right edge
    assert lines[3].startswith("40 GiB ┤") and lines[5].startswith(" 0 GiB ┤")
    assert lines[5][len(" 0 GiB ┤")] == "0"  # the oldest (0 GiB, 60 s ago) at the left edge, bottom row
    assert "└" in lines[6] and "-1m00s" in lines[7] and lines[7].rstrip().endswith("now")


def test_the_reducer_keeps_utilisation_and_sample_times_beside_memory() -> None:
    state = Readiness()
    for i, util in enumerate((10.0, 55.0, 90.0)):
        state = reduce(state, gpus(20.0 + i, util=util, n=2), T0 + 2 * i)
    assert state.gpu_history_at == (T0, T0 + 2, T0 + 4)
    assert dict(state.gpu_util_history)[1] == (10.0, 55.0, 90.0)
    assert len(dict(state.gpu_history)[0]) == 3


async def test_maximized_gpus_show_the_chart_and_redraw_only_on_a_new_sample() -> None:
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    async with app.run_test(size=(120, 48)) as pilot:
        steps = [Step(T0 + 2 * i, [gpus(10.0 + 10 * i, util=20.0 * i, n=2)]) for i in range(5)]
        await play(pilot, source, clock, steps)
        table, chart_pane = app.query_one(GpuPane), app.query_one(GpuChart)
        assert not chart_pane.display  # only under the maximized GPU table
        assert tuple(str(c.label) for c in table.columns.values()) == (*COLUMNS, "temp", "power")
        row = table.get_row("gpu1")
        assert row[len(COLUMNS)].plain.strip() == "40°C" and row[len(COLUMNS) + 1].plain.strip() == "120 W"
        await pilot.press("3", "3")
        await pilot.pause()
        assert app.screen.maximized is table and chart_pane.display and chart_pane.size.height > 10
        shown = chart_pane.shown
        assert "memory used per GPU" in shown and "GiB ┤" in shown and "utilisation per GPU" in shown
        assert "100% ┤" in shown and "now" in shown and "-8.0s" in shown
        drawn = []
        original = chart_pane.update
        chart_pane.update = lambda *a, **k: (drawn.append(1), original(*a, **k))[1]
        clock.t += 1
        app.view = app.view._replace(now=clock.t)  # a clock tick alone: nothing to draw
        await pilot.pause()
        assert drawn == []
        await play(pilot, source, clock, [Step(T0 + 12, [gpus(60.0, util=95.0, n=2)])])
        assert drawn == [1]
        await pilot.press("3")  # restored: the chart goes away
        await pilot.pause()
        assert app.screen.maximized is None and not chart_pane.display
