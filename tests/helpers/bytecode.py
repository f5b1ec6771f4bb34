"""Let a test run cache bytecode even where PYTHONDONTWRITEBYTECODE is set (it is on the shared development
machine). Without the cache every xdist worker compiles tui/ and assertion-rewrites ~280 test modules again on
every run, about 7 s of CPU each, and every `python -m tui` or simulator a test starts compiles tui/ anew. The
cache lands in `__pycache__/`, which git ignores. Imported first by tests/conftest.py, before anything of tui/."""

from __future__ import annotations

import sys

sys.dont_write_bytecode = False
