"""An srtctl job's log directory (NVIDIA/srt-slurm 2.x), the pure parts: the `srt:LOGDIR` target, the worker
logs' names as PD members (role, index, node), and the recipe's roles and counts (config.yaml's `resources:`).

Read from srt-slurm's own source at c88ef73 (2026-08-21), not from its docs (docs/srtctl-layout.md cites the
lines): a worker's log is `{node}_{mode}_w{index}.out` (src/srtctl/cli/mixins/worker_stage.py: one srun per
worker and node, `--output` that file; mode prefill | decode | agg); older releases and the project's notes
say `.err`, so both are read. The log directory is `{output_base}/{job_id}/logs/` (src/srtctl/core/runtime.py),
the batch script's own output `logs/sweep_{job_id}.log` (src/srtctl/templates/job_script_minimal.j2), the
recipe `config.yaml` beside `logs/` (src/srtctl/cli/submit.py), its counts under `resources:`
(src/srtctl/core/schema.py ResourceConfig: prefill_workers, decode_workers, agg_workers, *_nodes,
gpus_per_node). The worker's process name in srtctl is `{mode}_{index}_{node}`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.core.jobtargets import SRT_PREFIX
from tui.core.jobtargets import is_srt_target as is_srt_target  # re-exported: still importable from here
from tui.core.lazyre import lazy

PREFIX = SRT_PREFIX
_TARGET = lazy(r"^(?:(?P<login>[^/\s:]+)/)?srt:(?P<dir>\S.*)$")
WORKER_LOG = lazy(r"^(?P<node>[A-Za-z0-9][A-Za-z0-9._-]*?)_(?P<mode>prefill|decode|agg)_w(?P<index>\d+)\.(?:out|err)$")
_JOB_DIR = lazy(r"(?:^|/)(?P<job>\d+)(?:_[^/]*)?/logs/?$")  # {job_id}/logs, or logs/{job_id}_{P}P_{D}D_{ts}
_LEGACY_DIR = lazy(r"(?:^|/)(?P<job>\d+)_\d+P_\d+D_[^/]*/?$")
ROLE_ORDER = {"prefill": 0, "decode": 1, "agg": 2}


class SrtTargetError(ValueError):
    """An `srt:` target that does not parse: str() is one line saying what to write instead."""


@dataclass(frozen=True)
class SrtTarget:
    """`srt:LOGDIR` (on this machine) or `LOGIN/srt:LOGDIR` (on a login node, over SSH)."""

    log_dir: str
    login: str | None = None

    def __str__(self) -> str:
        return (f"{self.login}/" if self.login else "") + PREFIX + self.log_dir


def parse_target(text: str) -> SrtTarget:
    found = _TARGET.match(text.strip())
    if found is None or not found.group("dir").strip():
        raise SrtTargetError(
            f"{text!r} is no srtctl target: write srt:LOGDIR (an srtctl job's log directory, e.g. "
            "srt:outputs/4242/logs) or LOGIN/srt:LOGDIR to read it on a login node over SSH"
        )
    return SrtTarget(found.group("dir").strip().rstrip("/") or "/", found.group("login"))


def job_id_of(log_dir: str) -> str | None:
    """The Slurm job id a log directory names (`…/4242/logs`, or the older `logs/4242_4P_1D_20260101_…`)."""
    found = _JOB_DIR.search(log_dir.rstrip("/") + "/") or _LEGACY_DIR.search(log_dir.rstrip("/") + "/")
    return found.group("job") if found else None


@dataclass(frozen=True)
class SrtWorker:
    """One worker's log on one node: a PD member (`prefill0`, `decode1`, …; a worker on several nodes has one
    log per node, its node rank in the order of the node names)."""

    role: str  # prefill | decode | agg
    index: int
    node: str
    log: str  # the file name in the log directory

    @property
    def name(self) -> str:
        return f"{self.role}{self.index}"


def workers(file_names: list[str] | tuple[str, ...]) -> list[SrtWorker]:
    """The worker logs among a log directory's file names, prefill first, then decode, then agg, by index and
    node; where a worker left both a `.out` and an `.err`, the `.out` (what srtctl writes today)."""
    found: dict[tuple[str, int, str], SrtWorker] = {}
    for name in file_names:
        m = WORKER_LOG.match(name)
        if m is None:
            continue
        key = (m.group("mode"), int(m.group("index")), m.group("node"))
        if key not in found or name.endswith(".out"):
            found[key] = SrtWorker(key[0], key[1], key[2], name)
    return sorted(found.values(), key=lambda w: (ROLE_ORDER[w.role], w.index, w.node))


@dataclass(frozen=True)
class Recipe:
    """The roles and counts a recipe asks for (None: it does not say)."""

    prefill_workers: int | None = None
    decode_workers: int | None = None
    agg_workers: int | None = None
    prefill_nodes: int | None = None
    decode_nodes: int | None = None
    agg_nodes: int | None = None
    gpus_per_node: int | None = None
    gpus_per_prefill: int | None = None  # explicit; else computed as srtctl computes it (nodes_per_worker)
    gpus_per_decode: int | None = None
    gpus_per_agg: int | None = None

    @property
    def disaggregated(self) -> bool:
        return bool(self.prefill_workers or self.decode_workers)

    def counts(self) -> str:
        """`4P 1D` (or `2 agg`), as srtctl names its runs."""
        if self.disaggregated:
            return f"{self.prefill_workers or 0}P {self.decode_workers or 0}D"
        return f"{self.agg_workers or 0} agg"

    def nodes_per_worker(self, role: str) -> int:
        """How many nodes one worker of `role` spans, as srtctl decides it (src/srtctl/core/schema.py
        ResourceConfig.gpus_per_prefill/…: the explicit `gpus_per_{role}`, else `{role}_nodes * gpus_per_node //
        {role}_workers`, else one node's; src/srtctl/core/topology.py allocate_endpoints: ceil(gpus / gpus_per_node);
        gpus_per_node defaults to 4 there). 1 when the recipe says too little to tell."""
        per_node = self.gpus_per_node or SRTCTL_GPUS_PER_NODE
        return max(1, -(-self.gpus_per_worker(role) // per_node))

    def gpus_per_worker(self, role: str) -> int:
        """srtctl's `ResourceConfig.gpus_per_{role}` (src/srtctl/core/schema.py), rule for rule: decode workers on
        `decode_nodes: 0` share the prefill nodes and take the prefill workers' size."""
        per_node = self.gpus_per_node or SRTCTL_GPUS_PER_NODE
        gpus: int | None = getattr(self, f"gpus_per_{role}", None)
        if gpus is not None:
            return gpus
        nodes, workers = getattr(self, f"{role}_nodes", None), getattr(self, f"{role}_workers", None)
        if nodes and workers:
            return int(nodes * per_node // workers)
        if role == "decode" and self.decode_nodes == 0 and self.decode_workers:
            return self.gpus_per_worker("prefill")
        return per_node


SRTCTL_GPUS_PER_NODE = 4  # src/srtctl/core/schema.py ResourceConfig.gpus_per_node's default

_KEY = lazy(r"^(?P<indent>\s*)(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*(?P<value>[^#]*?)\s*(?:#.*)?$")


def parse_recipe(text: str) -> Recipe:
    """The `resources:` block of a config.yaml: its integer keys (a YAML subset: `key: 4` lines, comments; the
    rest of the recipe is not read)."""
    values: dict[str, int] = {}
    inside: int | None = None  # the indent of `resources:` while inside its block
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _KEY.match(line)
        if m is None:
            continue
        indent = len(m.group("indent").expandtabs())
        if inside is not None and indent <= inside:
            inside = None
        if m.group("key") == "resources" and not m.group("value"):
            inside = indent
            continue
        value = m.group("value").strip("'\"")
        if inside is not None and value.isdigit():
            values.setdefault(m.group("key"), int(value))
    known = Recipe.__dataclass_fields__
    return Recipe(**{k: v for k, v in values.items() if k in known})


_SWEEP_LOG = lazy(r"^(?P<dir>.*)/sweep_\d+\.log$")


def log_dir_of_stdout(std_out: str) -> str | None:
    """The srtctl log directory of a job whose StdOut is srtctl's `{output_base}/%j/logs/sweep_%j.log`
    (src/srtctl/templates/job_script_minimal.j2), None for any other job: `slurm:JOBID` recognises it so."""
    found = _SWEEP_LOG.match(std_out)
    return found.group("dir") if found else None


_LOG_PORT = lazy(r"(?:^|[\s,({])['\"]?port['\"]?\s*[:=]\s*(\d{2,5})\b")
HTTP_PORT_BASE = 6100  # src/srtctl/ports.py SGLANG_HTTP_PORT_BASE
HTTP_PORT_STRIDE = 32  # src/srtctl/ports.py SGLANG_HTTP_PORT_STRIDE


def log_port(head: str) -> int | None:
    """The HTTP port a worker's log names in its `server_args` (`'port': 6100` or `port=6100`), None before it."""
    found = _LOG_PORT.search(head)
    return int(found.group(1)) if found else None


_NODE_RANK = lazy(r"(?:^|[\s,({])['\"]?node_rank['\"]?\s*[:=]\s*(\d{1,4})\b")


def log_node_rank(head: str) -> int | None:
    """The node rank a worker's log names in its `server_args` (`node_rank=1`; srtctl passes `--node-rank` to each
    node of a worker that spans several: src/srtctl/backends/sglang.py build_worker_command), None before it."""
    found = _NODE_RANK.search(head)
    return int(found.group(1)) if found else None


_BOOTSTRAP_PORT = lazy(r"disaggregation_bootstrap_port['\"]?\s*[:=]\s*(\d{2,5})\b")


def log_bootstrap_port(head: str) -> int | None:
    """A prefill worker's PD bootstrap port as its log's `server_args` names it."""
    found = _BOOTSTRAP_PORT.search(head)
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class SrtEndpoint:
    """One worker (srtctl's `Endpoint`: src/srtctl/core/topology.py) with its logs, one per node, node 0 (its
    leader: the node that serves HTTP and that the router is given) first. A worker on one node has one log."""

    role: str
    index: int
    logs: tuple[SrtWorker, ...]

    @property
    def name(self) -> str:
        return f"{self.role}{self.index}"

    @property
    def leader(self) -> SrtWorker:
        return self.logs[0]


def endpoints(
    found: list[SrtWorker], ranks: dict[str, int | None], node_order: list[str] | tuple[str, ...] = ()
) -> list[SrtEndpoint]:
    """The worker logs grouped per worker (prefill first, by index), each worker's logs in node-rank order: the
    rank its log names (`ranks`: file name -> node_rank, None while unsaid), else the node's place in the job's
    node list (`node_order`: srtctl gives a worker's nodes in that order, src/srtctl/core/topology.py
    allocate_endpoints, and numbers them so: src/srtctl/backends/sglang.py `--node-rank`), else its name."""
    place = {n: i for i, n in enumerate(node_order)}
    groups: dict[tuple[str, int], list[SrtWorker]] = {}
    for w in found:
        groups.setdefault((w.role, w.index), []).append(w)

    def key(w: SrtWorker) -> tuple[int, int, str]:
        said = ranks.get(w.log)
        return (said if said is not None else 1 << 20, place.get(w.node, 1 << 20), w.node)

    return [
        SrtEndpoint(role, index, tuple(sorted(logs, key=key)))
        for (role, index), logs in sorted(groups.items(), key=lambda kv: (ROLE_ORDER[kv[0][0]], kv[0][1]))
    ]


def missing_nodes(found: list[SrtEndpoint], recipe: Recipe) -> list[str]:
    """`prefill0 1 of 2 nodes`: each worker with fewer node logs than the recipe makes it span."""
    out = []
    for e in found:
        want = recipe.nodes_per_worker(e.role)
        if len(e.logs) < want:
            out.append(f"{e.name} {len(e.logs)} of {want} nodes")
    return out


def node_member_name(worker: str, node_rank: int) -> str:
    """The member name of a worker's node: its leader is the worker (`prefill0`), the others `prefill0.node1`."""
    return worker if node_rank == 0 else f"{worker}.node{node_rank}"


def allocated_ports(found: list[SrtWorker]) -> dict[str, int]:
    """Each worker's HTTP port as srtctl allocates it when its log does not say yet (src/srtctl/core/topology.py
    NodePortAllocator.next_http_port: per node, from 6100 in steps of 32, in the order the workers are laid out,
    prefill before decode; only a worker's leader gets one, src/srtctl/core/topology.py endpoints_to_processes:
    give the leaders' logs)."""
    per_node: dict[str, int] = {}
    out = {}
    for w in found:
        k = per_node.get(w.node, 0)
        out[w.name] = HTTP_PORT_BASE + HTTP_PORT_STRIDE * k
        per_node[w.node] = k + 1
    return out


# The frontend (srt-slurm c88ef73): src/srtctl/frontends/sglang.py starts one sglang-router per frontend node,
# `python -m sglang_router.launch_router --pd-disaggregation --prefill URL [BOOTSTRAP] … --decode URL … --port P`,
# its srun `--output` `{node}_router_{idx}.out`; src/srtctl/cli/mixins/frontend_stage.py puts nginx in front of them
# (`{nginx_node}_nginx.out`) when there are several, the routers then on FRONTEND_INTERNAL_PORT, else on
# FRONTEND_PUBLIC_PORT (src/srtctl/ports.py). Dynamo's frontend (`{node}_frontend_{idx}.out`,
# src/srtctl/frontends/dynamo.py) answers no /workers: it is not read. `log.out` is what srt-slurm's docs call the
# orchestrator's stdout (docs/monitoring.md); the source writes that to `sweep_{job_id}.log` (read above).
ROUTER_LOG = re.compile(r"^(?P<node>[A-Za-z0-9][A-Za-z0-9._-]*?)_router_(?P<index>\d+)\.out$")
FRONTEND_PUBLIC_PORT = 8000  # src/srtctl/ports.py
FRONTEND_INTERNAL_PORT = 8180  # src/srtctl/ports.py: behind nginx
_ROUTER_PORT = re.compile(r"Starting router on [^\s:]+:(\d{2,5})\b|--port[ =](\d{2,5})\b")


@dataclass(frozen=True)
class SrtRouter:
    """One sglang-router's log on its node: the deployment's router member (`router0`)."""

    index: int
    node: str
    log: str

    @property
    def name(self) -> str:
        return f"router{self.index}"


def routers(file_names: list[str] | tuple[str, ...]) -> list[SrtRouter]:
    """The sglang-router logs among a log directory's file names, by index."""
    found = [(m, n) for n in file_names for m in [ROUTER_LOG.match(n)] if m is not None]
    return sorted((SrtRouter(int(m.group("index")), m.group("node"), n) for m, n in found), key=lambda r: r.index)


def router_port(head: str, file_names: list[str] | tuple[str, ...]) -> int:
    """The router's port: the one its log names (smg's `Starting router on 0.0.0.0:8000`, or its command line's
    `--port`), else srtctl's (8180 behind nginx, else 8000)."""
    found = _ROUTER_PORT.search(head)
    if found:
        return int(found.group(1) or found.group(2))
    nginx = any(n.endswith("_nginx.out") for n in file_names)
    return FRONTEND_INTERNAL_PORT if nginx else FRONTEND_PUBLIC_PORT


def router_named(head: str) -> bool:
    """Whether the router's log has named its port yet."""
    return _ROUTER_PORT.search(head) is not None


def sweep_job_id(file_names: list[str] | tuple[str, ...]) -> str | None:
    """The job id of the `sweep_{job_id}.log` in a log directory's file names."""
    for name in file_names:
        found = re.match(r"^sweep_(\d+)\.log$", name)
        if found:
            return found.group(1)
    return None


def worker_counts(found: list[SrtWorker]) -> str:
    """`2P 1D` of the workers found (agg workers as `N agg`)."""
    p = len({w.index for w in found if w.role == "prefill"})
    d = len({w.index for w in found if w.role == "decode"})
    a = len({w.index for w in found if w.role == "agg"})
    return f"{a} agg" if a and not (p or d) else f"{p}P {d}D"


# srtctl's own words, logged by its orchestrator into the job's StdOut (`sweep_{job_id}.log`; srt-slurm's
# src/ingest/ingest.py `_LIFECYCLE` reads them there): src/srtctl/core/health.py `Model is ready. Have {n} prefills
# and {m} decodes.`; src/srtctl/cli/mixins/benchmark_stage.py `Benchmark completed successfully` / `Benchmark failed
# with exit code {n}`. The benchmark's own output is `benchmark.out` (benchmark_stage.py): sa-bench's result table
# (src/srtctl/benchmarks/scripts/sa-bench/benchmark_serving.py `Total generated tokens:`, one per concurrency).
_MODEL_READY = lazy(r"Model is ready\. Have (\d+) prefills and (\d+) decodes")
_BENCH_DONE = lazy(r"Benchmark (completed successfully|failed with exit code -?\d+)")
_GENERATED = lazy(r"^Total generated tokens:\s+(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class BenchmarkWord:
    """What srtctl's log and the benchmark's output say of the run."""

    ready: str | None = None  # "2P 1D" when srtctl logged `Model is ready. Have 2 prefills and 1 decodes.`
    generated: tuple[int, ...] = ()  # each `Total generated tokens:` benchmark.out printed
    done: str | None = None  # "completed successfully" | "failed with exit code 1", srtctl's last word on it


def benchmark_word(sweep: str, bench: str) -> BenchmarkWord:
    """`sweep`: the job's StdOut (srtctl's log, its tail); `bench`: benchmark.out (its tail)."""
    ready = _MODEL_READY.findall(sweep)
    done = _BENCH_DONE.findall(sweep)
    return BenchmarkWord(
        ready=f"{ready[-1][0]}P {ready[-1][1]}D" if ready else None,
        generated=tuple(int(n) for n in _GENERATED.findall(bench)),
        done=done[-1] if done else None,
    )


@dataclass(frozen=True)
class Disagreement:
    """Where the benchmark's word and the servers' disagree (the fact; disagreement_line words it)."""

    zero_runs: int = 0  # runs benchmark.out reports with 0 generated tokens
    runs: int = 0  # runs benchmark.out reports
    done: str | None = None  # srtctl's last word on its benchmark
    ready: str | None = None  # "2P 1D": srtctl said the model is ready while the servers say otherwise
    completed: bool = False  # srtctl said its benchmark completed successfully while the servers say otherwise


def merged_word(old: BenchmarkWord | None, new: BenchmarkWord) -> BenchmarkWord:
    """A later read folded over an earlier one: each word kept once said (a tail may no longer hold it)."""
    if old is None:
        return new
    return BenchmarkWord(new.ready or old.ready, new.generated or old.generated, new.done or old.done)


def disagreement(word: BenchmarkWord | None, servers_ready: bool, servers_stuck: bool = True) -> Disagreement | None:
    """A run that generated 0 tokens, or srtctl saying the model is ready (or its benchmark completed) while the
    workers' own logs say otherwise; None when they agree or nothing is said yet. `servers_stuck`: the workers'
    verdict is failed or stalled; while they are still on their way (srtctl's health check can come a moment
    before their own ready is folded) its "ready" is no disagreement yet."""
    if word is None:
        return None
    if word.generated and min(word.generated) == 0:
        zero = sum(1 for n in word.generated if n == 0)
        return Disagreement(zero, len(word.generated), word.done)
    if servers_ready or not servers_stuck:
        return None
    completed = word.done == "completed successfully"
    if word.ready is None and not completed:
        return None
    return Disagreement(done=word.done, ready=word.ready, completed=completed)


def disagreement_line(found: Disagreement, servers_line: str) -> str:
    """The one line that says where they disagree (`servers_line`: the servers' own verdict line)."""
    if found.zero_runs:
        done = f", yet srtctl says its benchmark {found.done}" if found.done == "completed successfully" else ""
        return (
            f"benchmark.out reports 0 generated tokens ({found.zero_runs} of {found.runs} run(s)){done}: "
            "the servers never served it"
        )
    said = [f"the model is ready ({found.ready})"] if found.ready is not None else []
    said += ["its benchmark completed successfully"] if found.completed else []
    return f"srtctl's log says {' and '.join(said)}, but the workers' own logs say: {servers_line}"


def disagreement_short(found: Disagreement) -> str:
    """The board cell's short form."""
    if found.zero_runs:
        return "benchmark: 0 generated tokens"
    return "srtctl says ready, workers not" if found.ready is not None else "srtctl says benchmark done, workers not"


def benchmark_disagrees(word: BenchmarkWord, servers_ready: bool, servers_line: str) -> str | None:
    """The benchmark's word checked against the servers': the line where they disagree, None when they agree."""
    found = disagreement(word, servers_ready)
    return disagreement_line(found, servers_line) if found is not None else None
