"""Regenerates screenshots/*.svg from the same scenes as the snapshots: `.venv/bin/python -m pytest -m screenshots`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.ui_fakes import SCENES, scene_app

SCREENSHOTS = Path(__file__).resolve().parent.parent / "screenshots"


@pytest.mark.screenshots
@pytest.mark.parametrize("scene", SCENES, ids=[s.name for s in SCENES])
async def test_export_screenshot(scene) -> None:  # type: ignore[no-untyped-def]
    app, run_before = scene_app(scene)
    async with app.run_test(size=scene.size, notifications=True) as pilot:
        await run_before(pilot)
        await pilot.pause()
        SCREENSHOTS.mkdir(exist_ok=True)
        path = Path(app.save_screenshot(filename=f"{scene.name}.svg", path=str(SCREENSHOTS)))
    assert path.exists() and "sglang-tui" in path.read_text()
