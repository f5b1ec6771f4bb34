"""Regenerates screenshots/*.svg from the same scenes as the snapshots: `.venv/bin/python -m pytest -m screenshots`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.ui_fakes import SCENES, scene_app

SCREENSHOTS = Path(__file__).resolve().parent.parent / "screenshots"

# Textual's SVG asks for "Fira Code, monospace", loaded from the web. A renderer that cannot fetch it and
# reads only the first family (cairosvg) falls back to a proportional font: text runs drift off their cells
# (the phase badge overlapped the next words). A monospace font that is usually installed comes first.
SVG_FONT = "font-family: Fira Code, monospace;"
PORTABLE_FONT = 'font-family: "DejaVu Sans Mono", "Fira Code", monospace;'


def portable_fonts(svg: str) -> str:
    """The SVG with a monospace font first in its family list (one that renders without the network)."""
    assert SVG_FONT in svg, "Textual's SVG template changed: check the font-family it asks for"
    return svg.replace(SVG_FONT, PORTABLE_FONT)


@pytest.mark.screenshots
@pytest.mark.parametrize("scene", SCENES, ids=[s.name for s in SCENES])
async def test_export_screenshot(scene) -> None:  # type: ignore[no-untyped-def]
    app, run_before = scene_app(scene)
    async with app.run_test(size=scene.size, notifications=True) as pilot:
        await run_before(pilot)
        await pilot.pause()
        SCREENSHOTS.mkdir(exist_ok=True)
        path = Path(app.save_screenshot(filename=f"{scene.name}.svg", path=str(SCREENSHOTS)))
    path.write_text(portable_fonts(path.read_text()))
    assert "sglang-tui" in path.read_text() and PORTABLE_FONT in path.read_text()
