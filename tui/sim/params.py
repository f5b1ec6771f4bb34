"""The simulated launch's parameters, shared by the main process and every child (passed as JSON)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from tui.sim.logformat import VERSIONS
from tui.sim.memory import MEM_FRACTION_STATIC

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
    "gated",
)
SPECULATIVE = ("EAGLE3", "EAGLE", "none")
MAX_ACCEPT_LEN = 4.0  # speculative_num_draft_tokens: a verify step yields at most this many tokens
MODEL = "meta-llama/Llama-3.3-70B-Instruct"
DRAFT_MODELS = {
    "EAGLE3": "lmsys/sglang-EAGLE3-LLaMA3.3-Instruct-70B",
    "EAGLE": "lmsys/sglang-EAGLE-LLaMA3-Instruct-70B",
}


@dataclass(frozen=True)
class SimParams:
    """What to simulate. t0 is the real epoch the simulated clock starts from (set by the main process)."""

    log: str
    port: int
    tp: int = 8
    host: str = "127.0.0.1"  # where HTTP listens (SGLang's --host; "::1" listens on IPv6 loopback only)
    shards: int = 64
    speed: float = 10.0
    fault: str | None = None
    fmt: str = "0.5.23"
    speculative: str | None = "EAGLE3"  # None: no speculative decoding
    gpu_state: str | None = None
    traffic: float = 0.0  # background requests per simulated minute once ready
    eplb_every: float = 0.0  # --enable-eplb: every rank logs an EPLB rebalance this often (simulated s) once ready
    accept_len: float = 3.2  # mean speculative acceptance length (tokens per verify step), 1 to 4
    t0: float = 0.0
    seed: int = 0
    loader: str = "default"  # default | multithread (issue 9: the burst pattern)
    slow: str = ""  # "cuda_graph=2,weights=1.5": phases made slower (issue 9)
    fault_seconds: float | None = None  # real seconds a silent fault (jit-compile, download) runs; None: its own
    backdate: float = 0.0  # real seconds the log's clock (its stamps, the file's mtime) is behind: begun earlier
    nnodes: int = 1  # multi-node: tp ranks split evenly over nnodes simulator processes (tui/sim/cluster.py)
    node_rank: int = 0
    dist_init_addr: str | None = None  # HOST:PORT node 0 listens on for the other nodes
    disaggregation_mode: str | None = None  # prefill | decode (PD disaggregation); None: a plain server
    # SGLang's own options a remedy changes (tui/core/remedy.py): None is SGLang's default (0.87; 48 or 256)
    mem_fraction_static: float | None = None
    cuda_graph_max_bs: int | None = None
    bootstrap_port: int = 8998  # prefill: where decode servers fetch KV transfer info
    # SGLANG_EARLY_FORKSERVER=1 (tui/sim/forkserver.py): the ranks and the detokenizer are forked by a forkserver,
    # a child of this process ("private") or a detached one that serves every launch ("daemon"); None: children
    forkserver: str | None = None

    @property
    def ranks_per_node(self) -> int:
        return self.tp // max(1, self.nnodes)

    @property
    def local_ranks(self) -> range:
        """The global TP ranks this node runs (node 1 of 2x8 runs TP8-TP15)."""
        first = self.node_rank * self.ranks_per_node
        return range(first, first + self.ranks_per_node)

    @property
    def draft_model(self) -> str | None:
        return DRAFT_MODELS.get(self.speculative or "")

    @property
    def model_path(self) -> str:
        return MODEL

    @property
    def fault_rank(self) -> int:
        """The rank a per-rank fault hits (TP3 on an 8-GPU launch, like the reference examples)."""
        return self.local_ranks.start + min(3, self.ranks_per_node - 1)  # faults apply per node

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SimParams:
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
    if not 1 <= params.port <= 65535 and not (params.port == 0 and params.node_rank > 0):
        # a non-zero node serves no HTTP: srtctl gives it `--port 0` (src/srtctl/core/topology.py: only a leader
        # gets an http_port)
        return f"--port {params.port}: use a TCP port between 1 and 65535 (0 only with a --node-rank above 0)"
    if params.fault is not None and params.fault not in FAULTS:
        return f"--fault {params.fault}: use one of {', '.join(FAULTS)}"
    if params.speculative is not None and not 1.0 <= params.accept_len <= MAX_ACCEPT_LEN:
        return (f"--accept-len {params.accept_len}: use 1 to {MAX_ACCEPT_LEN:g} tokens per verify step "
                "(4 draft tokens), or 0 / none for no speculative decoding")  # fmt: skip
    if params.nnodes < 1 or params.tp % params.nnodes:
        return f"--nnodes {params.nnodes}: use a node count that divides --tp {params.tp}"
    if not 0 <= params.node_rank < params.nnodes:
        return f"--node-rank {params.node_rank}: use 0 to {params.nnodes - 1}"
    if params.nnodes > 1 and not _host_port(params.dist_init_addr):
        return "--dist-init-addr: a multi-node launch needs HOST:PORT (node 0 listens there)"
    if params.disaggregation_mode not in (None, "prefill", "decode"):
        return f"--disaggregation-mode {params.disaggregation_mode}: use prefill or decode"
    if params.forkserver not in (None, "private", "daemon"):
        return f"--forkserver {params.forkserver}: use private or daemon"
    if not 1 <= params.bootstrap_port <= 65535:
        return f"--disaggregation-bootstrap-port {params.bootstrap_port}: use a TCP port between 1 and 65535"
    if params.traffic < 0:
        return f"--traffic {params.traffic}: use 0 or more requests per minute"
    if not 0 <= params.backdate <= 86400 * 365:  # NaN fails too
        return f"--backdate {params.backdate}: use 0 or more seconds (up to a year)"
    if params.eplb_every < 0:
        return f"--eplb-every {params.eplb_every}: use 0 (off) or more simulated seconds between rebalances"
    if params.fault_seconds is not None and not 1 <= params.fault_seconds <= 3600:
        return f"--fault-seconds {params.fault_seconds:g}: use 1 to 3600 real seconds"
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


def _host_port(addr: str | None) -> tuple[str, int] | None:
    host, _, port = (addr or "").rpartition(":")
    return (host, int(port)) if host and port.isdigit() and 0 < int(port) < 65536 else None


def dist_addr(params: SimParams) -> tuple[str, int]:
    """(host, port) of --dist-init-addr (check() has vetted it)."""
    found = _host_port(params.dist_init_addr)
    assert found is not None
    return found


def default_max_bs(p: SimParams) -> int:
    return 48 if p.speculative else 256


def capture_fits(p: SimParams) -> bool:
    """The oom-capture fault's remedy was taken: less static memory than the default, or fewer capture batch sizes
    (what SGLang's own `Possible solutions:` says), so the relaunch's capture fits."""
    fraction = p.mem_fraction_static is not None and p.mem_fraction_static < MEM_FRACTION_STATIC
    return fraction or (p.cuda_graph_max_bs is not None and p.cuda_graph_max_bs < default_max_bs(p))
