"""The model's safetensors files on the host, by `stat` only (never read): the weights' bytes behind the byte
ETA on a first launch, before any history says how much GPU memory the weights take.

One command per model path, run once: a local model directory, else the HF cache snapshot its `refs/main`
names ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub).
"""

from __future__ import annotations

import asyncio
import shlex

from tui.core.events import WeightFiles
from tui.core.state import Readiness
from tui.sources.host import Host

TIMEOUT_S = 10.0


def stat_command(model: str) -> str:
    """The `sh` command printing one size in bytes per safetensors file of `model` (nothing when none)."""
    q = shlex.quote(model)
    repo = shlex.quote("models--" + model.strip("/").replace("/", "--"))
    return (
        f"d={q}; case $d in '~/'*) d=$HOME/${{d#'~/'}};; esac; "
        f'if [ -d "$d" ]; then set -- "$d"/*.safetensors; else '
        "h=${HF_HUB_CACHE:-${HF_HOME:-$HOME/.cache/huggingface}/hub}; "
        f'r=$h/{repo}; s=$(cat "$r/refs/main" 2>/dev/null); set -- "$r/snapshots/$s"/*.safetensors; fi; '
        '[ -e "$1" ] && stat -L -c %s -- "$@"; true'
    )


def parse_sizes(model: str, out: str) -> WeightFiles:
    sizes = [int(line) for line in out.split() if line.isdigit()]
    return WeightFiles(model, sum(sizes) if sizes else None, len(sizes))


async def stat_weight_files(host: Host, model: str) -> WeightFiles:
    try:
        result = await host.run(stat_command(model), timeout=TIMEOUT_S)
    except Exception:  # a probe that cannot run leaves the byte ETA to the history: never an error
        return WeightFiles(model)
    return parse_sizes(model, result.stdout.decode(errors="replace"))


class WeightFilesProbe:
    """Starts one stat per model path once the server_args name it; `poll` hands back the result as an event."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._task: asyncio.Task[WeightFiles] | None = None
        self._model: str | None = None

    def poll(self, state: Readiness) -> list[WeightFiles]:
        model = state.server.model
        if model and model != self._model:
            self._model = model
            if self._task is not None:
                self._task.cancel()
            self._task = asyncio.get_running_loop().create_task(stat_weight_files(self.host, model))
            return []
        if self._task is not None and self._task.done():
            task, self._task = self._task, None
            if not task.cancelled() and task.exception() is None:
                return [task.result()]
        return []

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
