"""The detokenizer child (`sglang::detokenizer`): holds no GPU memory, lives as long as its parent."""

from __future__ import annotations

import json

from tui.sim.forkserver import exit_with_launcher
from tui.sim.procs import mark_child
from tui.sim.rank import idle

TITLE = "sglang::detokenizer"


def child_main(payload_json: str) -> None:
    payload = json.loads(payload_json)
    forked = bool(payload.get("forked"))  # by a forkserver: it leaves once its launching process is gone
    mark_child(TITLE, int(payload["parent"]), die_with_parent=not forked)
    if forked:
        exit_with_launcher(int(payload["parent"]), [])
    try:
        idle()
    except KeyboardInterrupt:
        pass
