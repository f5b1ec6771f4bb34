"""The clipboard as a terminal app can reach it: OSC 52, which the terminal obeys where it allows it (and tmux or
screen pass on only when set to). Nothing comes back to say it did, so the text is also saved to a file, and the
notice says both, never "copied" (tmux's default `set-clipboard external` drops an app's OSC 52 without a word)."""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path

#: What tmux needs to let it through (tmux(1): set-clipboard, allow-passthrough), said once a copy went through tmux.
TMUX_NEEDS = "tmux passes it on with `set -g set-clipboard on` or `set -g allow-passthrough on`"


def osc52(text: str) -> str:
    """The xterm sequence that sets the clipboard ("c") to `text`: the text as base64, so no byte of it reaches the
    terminal raw."""
    return "\x1b]52;c;" + base64.b64encode(text.encode("utf-8", "surrogateescape")).decode("ascii") + "\x07"


def tmux_passthrough(sequence: str) -> str:
    """`sequence` wrapped for tmux to hand to the terminal outside it (DCS `tmux;`, every ESC doubled): tmux 3.3+
    obeys it only with `allow-passthrough on`."""
    return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"


def screen_passthrough(sequence: str) -> str:
    """`sequence` wrapped for GNU screen to hand to the terminal outside it (a DCS string)."""
    return "\x1bP" + sequence + "\x1b\\"


def sequences(text: str, env: Mapping[str, str]) -> list[str]:
    """What to write for `text` to reach the clipboard: OSC 52 (a terminal, or tmux with `set-clipboard on`, which
    also keeps it as a tmux buffer), and inside tmux or screen the same wrapped to pass through to the terminal."""
    sequence = osc52(text)
    if env.get("TMUX"):
        return [sequence, tmux_passthrough(sequence)]
    if env.get("STY"):
        return [sequence, screen_passthrough(sequence)]
    return [sequence]


def through(env: Mapping[str, str]) -> str:
    """The multiplexer the sequence goes through ("tmux", "screen"), or "" for none."""
    return "tmux" if env.get("TMUX") else "screen" if env.get("STY") else ""


def save(text: str, path: Path) -> str | None:
    """Write `text` to `path` (its directory made, replaced atomically); the problem as one line, or None."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8", errors="surrogateescape")
        os.replace(tmp, path)
    except OSError as err:
        return f"not saved to {path}: {err.strerror or err}"
    return None


def file_label(label: str) -> str:
    """A host label as a file name's part (`gpu-node-7`, `local_demo__51743`)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[:40] or "host"
