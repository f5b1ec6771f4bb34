"""The safetensors files' bytes on the host (stat only, through the real LocalHost), and the byte ETA they give
a first launch with no history."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.helpers.processes import Spawner
from tests.test_readiness_phases import at, feed, ranks
from tui.core.eta import estimate
from tui.core.events import GpuInfo, GpuSnapshot, Milestone, ServerArgs, WeightFiles
from tui.core.readiness import reduce
from tui.sources.local import LocalHost
from tui.sources.weightfiles import WeightFilesProbe, stat_weight_files

GIB = 1 << 30


async def stat(model: str) -> WeightFiles:
    host = LocalHost()
    await host.connect()
    try:
        return await stat_weight_files(host, model)
    finally:
        await host.close()


def test_local_directory_and_hf_cache_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spawn: Spawner) -> None:
    model = tmp_path / "my model"  # a space: quoted
    model.mkdir()
    for i, size in enumerate((1000, 2000)):
        with open(model / f"model-{i:05d}-of-00002.safetensors", "wb") as f:
            f.truncate(size)
    (model / "config.json").write_text("{}")
    assert asyncio.run(stat(str(model))) == WeightFiles(str(model), 3000, 2)
    hub = tmp_path / "hub" / "models--org--name"
    (hub / "refs").mkdir(parents=True)
    (hub / "refs" / "main").write_text("abc123")
    (hub / "snapshots" / "abc123").mkdir(parents=True)
    (hub / "snapshots" / "old").mkdir(parents=True)
    with open(hub / "snapshots" / "abc123" / "a.safetensors", "wb") as f:
        f.truncate(5000)
    with open(hub / "snapshots" / "old" / "a.safetensors", "wb") as f:
        f.truncate(7)  # another revision: not counted
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert asyncio.run(stat("org/name")) == WeightFiles("org/name", 5000, 1)
    assert asyncio.run(stat("org/$(touch pwned)'")) == WeightFiles("org/$(touch pwned)'", None, 0)
    assert not Path("pwned").exists()


def test_probe_runs_once_per_model(tmp_path: Path, spawn: Spawner) -> None:
    async def go() -> list[WeightFiles]:
        host = LocalHost()
        await host.connect()
        probe = WeightFilesProbe(host)
        s = feed([ServerArgs(model=str(tmp_path), tp_size=2, **at(0))])
        found: list[WeightFiles] = []
        for _ in range(200):
            found += probe.poll(s)
            if found:
                break
            await asyncio.sleep(0.02)
        found += probe.poll(s)  # nothing more for the same model
        await host.close()
        return found

    assert asyncio.run(go()) == [WeightFiles(str(tmp_path), None, 0)]


def test_first_launch_gets_a_byte_eta_from_the_files() -> None:
    def snap(used_gib: float) -> GpuSnapshot:
        return GpuSnapshot(
            "sim", tuple(GpuInfo(i, used_bytes=int(used_gib * GIB), total_bytes=140 * GIB) for i in (0, 1))
        )

    s = feed([ServerArgs(model="m", tp_size=2, **at(0))] + ranks("init_begin", 2))
    s = reduce(s, WeightFiles("m", 64 * GIB, 30), 36002.0)  # 32 GiB per rank at TP2
    s = reduce(s, snap(2.0), 36003.0)
    s = reduce(s, Milestone("load_begin", rank="TP0", **at(4)), 36004.0)
    for sec in range(5, 13):
        s = reduce(s, snap(2.0 + 2 * (sec - 4)), 36000.0 + sec)  # 2 GiB/s per GPU: 16 of 32 GiB at second 12
    eta = estimate(s, 36012.0)
    assert eta.source == "GPU memory" and eta.basis == "progress" and eta.ready_in_s is None
    assert eta.phase_left_s == pytest.approx(8.0, abs=0.3)
    other = reduce(s, WeightFiles("another/model", 64 * GIB, 30), 36012.0)
    assert estimate(other, 36012.0).source == ""  # the files of another model are not taken (no bar yet either)
