"""Snapshot tests of the screen in each state (fixed clock, fixed PIDs): update only after looking at them."""

from __future__ import annotations

import pytest

from tests.helpers.ui_fakes import SCENES, scene_app


@pytest.mark.parametrize("scene", SCENES, ids=[s.name for s in SCENES])
def test_screen(scene, snap_compare) -> None:
    app, run_before = scene_app(scene)
    assert snap_compare(app, terminal_size=scene.size, run_before=run_before)
