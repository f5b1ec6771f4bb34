"""tui.core is pure: importing every module of it loads no textual, asyncssh, httpx or pynvml."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.helpers.processes import Spawner

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("textual", "asyncssh", "httpx", "pynvml")

PROBE = """
import importlib, json, pkgutil, sys
import tui.core
names = sorted(m.name for m in pkgutil.iter_modules(tui.core.__path__, "tui.core."))
for name in names:
    importlib.import_module(name)
loaded = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[1:]))
print(json.dumps({"modules": names, "loaded": loaded}))
"""


def test_core_modules_import_no_io_or_ui_library(spawn: Spawner) -> None:
    proc = spawn.run([sys.executable, "-c", PROBE, *FORBIDDEN], cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    expected = {
        "tui.core.readiness",
        "tui.core.stall",
        "tui.core.timeline",
        "tui.core.fmt",
        "tui.core.report",
        "tui.core.events",
        "tui.core.state",
        "tui.core.logparse",
        "tui.core.ranks",
    }
    assert expected <= set(result["modules"])
    assert result["loaded"] == []


def test_the_probe_would_see_a_forbidden_import(spawn: Spawner) -> None:
    """The check can fail: the same probe run after importing httpx reports it."""
    code = "import httpx\n" + PROBE
    proc = spawn.run([sys.executable, "-c", code, *FORBIDDEN], cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["loaded"] == ["httpx"]
