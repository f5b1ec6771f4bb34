"""The simulated launch's parameters, shared by the main process and every child (passed as JSON)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from tui.sim.logformat import VERSIONS

FAULTS = (
    "oom-capture",
    "oom-load",
    "nccl-timeout",
    "hang-weights",
    "hang-capture",
    "crash",
    "port-in-use",
    "warmup-fail",
    "orphans",
    "jit-compile",
    "hang-rank",
    "download",
)
SPECULATIVE = ("EAGLE3", "EAGLE", "none")
MAX_ACCEPT_LEN = 4.0  # speculative_num_draft_tokens: a verify step yields at most this many tokens
MODEL = "meta-llama/Llama-3.3-70B-Instruct"
DRAFT_MODELS = {"EAGLE3": "lmsys/sglang-EAGLE3-LLaMA3.3-Instruct-70B", "EAGLE": "lmsys/sglang-EAGLE-LLaMA3-Instruct-70B"}


@dataclass(frozen=True)
class SimParams:
    """What to simulate. t0 is the real epoch the simulated clock starts from (set by the main process)."""

    log: str
    port: int
    tp: int = 8
    shards: int = 64
    speed: float = 10.0
    fault: str | None = None
    fmt: str = "0.5.23"
    speculative: str | None = "EAGLE3"  # None: no speculative decoding
    gpu_state: str | None = None
    traffic: float = 0.0  # background requests per simulated minute once ready
    accept_len: float = 3.2  # mean speculative acceptance length (tokens per verify step), 1 to 4
    t0: float = 0.0
    seed: int = 0
    loader: str = "default"  # default | multithread (issue 9: the burst pattern)
    slow: str = ""  # "cuda_graph=2,weights=1.5": phases made slower (issue 9)

    @property
    def draft_model(self) -> str | None:
        return DRAFT_MODELS.get(self.speculative or "")

    @property
    def model_path(self) -> str:
        return MODEL

    @property
    def fault_rank(self) -> int:
        """The rank a per-rank fault hits (TP3 on an 8-GPU launch, like the reference examples)."""
        return min(3, self.tp - 1)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "SimParams":
        return cls(**json.loads(text))


def check(params: SimParams) -> str | None:
    """One line saying what is wrong with the parameters, or None."""
    if params.fmt not in VERSIONS:
        return f"--format {params.fmt}: unknown SGLang log format; use one of {', '.join(VERSIONS)}"
    if params.speculative not in (None, "EAGLE3", "EAGLE"):
        return f"--speculative {params.speculative}: use one of {', '.join(SPECULATIVE)}"
    if not 1 <= params.tp <= 64:
        return f"--tp {params.tp}: use 1 to 64 ranks"
    if not 1 <= params.shards <= 10000:
        return f"--shards {params.shards}: use 1 to 10000 shards"
    if not 0.01 <= params.speed <= 100000:
        return f"--speed {params.speed}: use a factor between 0.01 and 100000"
    if not 1 <= params.port <= 65535:
        return f"--port {params.port}: use a TCP port between 1 and 65535"
    if params.fault is not None and params.fault not in FAULTS:
        return f"--fault {params.fault}: use one of {', '.join(FAULTS)}"
    if params.speculative is not None and not 1.0 <= params.accept_len <= MAX_ACCEPT_LEN:
        return (f"--accept-len {params.accept_len}: use 1 to {MAX_ACCEPT_LEN:g} tokens per verify step "
                "(4 draft tokens), or 0 / none for no speculative decoding")  # fmt: skip
    if params.traffic < 0:
        return f"--traffic {params.traffic}: use 0 or more requests per minute"
    return check_variation(params)


def check_variation(params: SimParams) -> str | None:
    """The issue-9 parameters: --loader, --slow, --seed."""
    from tui.sim.variation import LOADERS, parse_slow

    if params.loader not in LOADERS:
        return f"--loader {params.loader}: use one of {', '.join(LOADERS)}"
    try:
        parse_slow(params.slow)
    except ValueError as err:
        return str(err)
    if params.seed < 0:
        return f"--seed {params.seed}: use 0 (the classic schedule) or a positive integer"
    return None
