"""The deployment TUI: two simulated nodes watched by the real app (one Monitor per node, local hosts);
one verdict in the header, the members pane, and 16 GPUs in one pane grouped by node with global indexes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers.processes import Sims
from tui.core.state import Phase
from tui.core.wording import verdict_line
from tui.sources.deployment import DeploymentMonitor, node_specs
from tui.sources.deployment_session import MemberFolder, deployment_of
from tui.sources.local import LocalHost
from tui.ui.app import UiSources
from tui.ui.deployment_app import DeploymentTui, MembersPane
from tui.ui.panes.gpus import GpuPane
from tui.ui.panes.header import HeaderPane

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "screenshots"


async def test_two_nodes_in_one_view_to_ready(tmp_path: Path, sim: Sims) -> None:
    await _two_nodes_to_ready(tmp_path, sim, shots=tmp_path)  # the screen is drawn, into this test's directory


@pytest.mark.screenshots
async def test_export_deployment_screenshot(tmp_path: Path, sim: Sims) -> None:
    """screenshots/deployment_2x8_ready.svg (rewritten only under -m screenshots, as every screenshot)."""
    await _two_nodes_to_ready(tmp_path, sim, shots=SCREENSHOTS)


async def _two_nodes_to_ready(tmp_path: Path, sim: Sims, shots: Path) -> None:
    nodes = sim.nodes(tmp_path, shards=16, speed=60, speculative="none")
    specs = node_specs([f"local:{n.log}" for n in nodes], log=None, port=nodes[0].port,
                       sim_gpus=",".join(str(n.gpu_state) for n in nodes))  # fmt: skip
    monitor = DeploymentMonitor.build([(s, LocalHost()) for s in specs], remote_python=sys.executable)
    dep = deployment_of(specs, None)
    folder = MemberFolder(dep)
    app = DeploymentTui(UiSources(batches=monitor.batches, host_label="local local", port=nodes[0].port),  # type: ignore[arg-type]
                        dep, monitor.batches, folder)  # fmt: skip
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            saw_wait = False
            for _ in range(1200):
                await pilot.pause(0.05)
                saw_wait = saw_wait or "node1" in verdict_line(app.state)
                if app.state.phase in (Phase.READY, Phase.SERVING) and app.query_one(GpuPane).row_count == 16:
                    break
            assert app.state.phase in (Phase.READY, Phase.SERVING), verdict_line(app.state)
            assert saw_wait  # the verdict named the other node on the way
            assert app.state.server.tp_size == 16
            gpus = app.query_one(GpuPane)
            assert gpus.row_count == 16
            assert str(gpus.get_row_at(8)[0]) == "node1 8" and str(gpus.get_row_at(15)[1]) == "TP15"
            members = str(app.query_one(MembersPane).render())
            assert "node0" in members and "node1" in members
            assert members.count("weights ") == 2  # a timeline per node
            rows = members.splitlines()  # QA pass: node1's own log ends in capture (no "fired up" on a
            assert rows[2].startswith("node1") and "+" not in rows[3], members  # non-zero node): not ticking on
            assert verdict_line(app.state) == "ready: 2 nodes, tp 16" and "TP16" in app.query_one(HeaderPane).shown
            app.save_screenshot(filename="deployment_2x8_ready.svg", path=str(shots))
    finally:
        await monitor.close()
