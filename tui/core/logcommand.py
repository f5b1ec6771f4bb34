"""A launch command written into the log (an echo of the script, a user's paste above the output): the sizes its
options state. `python -m sglang.launch_server …` and `sglang serve …` (the documented form from 2026) alike.

It states the TP size as server_args does, but it is no launch line of SGLang's: a `server_args=` after it is the
same launch and wins where they differ.
"""

from __future__ import annotations

import re

from tui.core.events import ServerArgs
from tui.core.lazyre import lazy

LAUNCH_COMMAND = lazy(r"(?:\bpython[\d.]*\s+-m\s+sglang\.launch_server|\bsglang\s+serve)\b(?=\s|$)", re.ASCII)
_OPTION = lazy(r"(?<!\S)(--[a-z][a-z0-9-]*)(?:=(\S*)|\s+([^\s-]\S*))?", re.ASCII)
_SIZES = {
    "tp": ("--tp", "--tp-size", "--tensor-parallel-size"),
    "dp": ("--dp", "--dp-size", "--data-parallel-size"),
    "pp": ("--pp", "--pp-size", "--pipeline-parallel-size"),
    "ep": ("--ep", "--ep-size", "--expert-parallel-size"),
    "nnodes": ("--nnodes",),
}
_MODEL = ("--model-path", "--model")
_SPECULATIVE = ("--speculative-algorithm", "--speculative-algo")


def command_sizes(command: str) -> ServerArgs | None:
    """The arguments a launch command states (None when it states none of them)."""
    options: dict[str, str] = {}
    for m in _OPTION.finditer(command):
        value = m.group(2) if m.group(2) is not None else m.group(3)
        if value is not None:
            options.setdefault(m.group(1), value.strip("'\""))
    sizes = {key: _first_int(options, names) for key, names in _SIZES.items()}
    model = next((options[n] for n in _MODEL if n in options), None)
    if model is None:  # `sglang serve MODEL`: the model may come first, without its option
        after = command.split("serve", 1)[1].split() if LAUNCH_COMMAND.search(command) and " serve" in command else []
        # a model id or a path (`org/name`, `/models/x`): a sentence that names the command ("use sglang serve
        # instead") is no command
        model = after[0] if after and not after[0].startswith("-") and "/" in after[0] else None
    algorithm = next((options[n].upper() for n in _SPECULATIVE if n in options), None)
    if model is None and algorithm is None and all(v is None for v in sizes.values()):
        return None
    return ServerArgs(
        model=model,
        tp_size=sizes["tp"],
        dp_size=sizes["dp"],
        pp_size=sizes["pp"],
        speculative=algorithm,
        ep_size=sizes["ep"],
        nnodes=sizes["nnodes"],
        stated_only=True,
    )


def _first_int(options: dict[str, str], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = options.get(name)
        if value is not None and value.isdigit() and len(value) < 7:
            return int(value)
    return None
