"""SGLang's `/server_info` answer (`/get_server_info` in 0.4.x), read once when /health first says 200: its
`version` (0.4.6 … 0.5.23) and 0.5.23's `startup_time`, the same figures as the `Engine startup timings (s)` line
(engine.py `_set_startup_time`: load_weight, kv_cache_allocation, scheduler_e2e, cuda_graph={phase: s},
tokenizer_e2e; None until the schedulers are up). Pure: the body's bytes in, facts out.
"""

from __future__ import annotations

import json

from tui.core.answerer import identity
from tui.core.state import Phase, Readiness

MAX_FIGURES = 32
GRACE_S = 6.0  # how long `wait` stays after ready for that one answer (the probe's own timeout is 5 s)


def awaits_server_info(s: Readiness) -> bool:
    """Ready, and the one /server_info read is still to come: the health probe asks it right after the /health
    200 whose identity answer was SGLang's (tui.sources.health)."""
    if s.server_info is not None or not s.health_probed or s.phase not in (Phase.READY, Phase.SERVING):
        return False
    ident = identity(s)
    return ident is not None and ident.outcome == "ok"


def parse_server_info(content: bytes) -> tuple[str | None, tuple[tuple[str, float], ...], str | None] | None:
    """(version, startup_time figures, model_path) of a /server_info body; None when it is not a JSON object."""
    try:
        body = json.loads(content)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    version = body.get("version")
    model = body.get("model_path")
    return (
        version if isinstance(version, str) and version else None,
        startup_figures(body.get("startup_time")),
        model if isinstance(model, str) and model else None,
    )


def startup_figures(startup_time: object) -> tuple[tuple[str, float], ...]:
    """`startup_time` flattened as the log line's fields are: scalars by name, cuda_graph's phases summed as
    cuda_graph_total (and each as cuda_graph.<phase>). Empty for None or anything else."""
    if not isinstance(startup_time, dict):
        return ()
    out: list[tuple[str, float]] = []
    for name, value in startup_time.items():
        if isinstance(value, bool) or not isinstance(name, str):
            continue
        if isinstance(value, (int, float)):
            out.append((name, float(value)))
        elif name == "cuda_graph" and isinstance(value, dict):
            graphs = [
                (str(k), float(v)) for k, v in value.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
            ]
            out += [(f"cuda_graph.{k}", v) for k, v in graphs]
            out.append(("cuda_graph_total", round(sum(v for _, v in graphs), 4)))
    return tuple(out[:MAX_FIGURES])
