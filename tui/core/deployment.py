"""The whole deployment: several members (the nodes of one multi-node server, or PD prefill/decode servers
behind a router), each with its own `Readiness`, and the one verdict derived from all of them.

Every member's state is built by the existing reducer from that member's events alone; this module only
reads those states. It decides:
- each member's effective phase (a non-zero node prints no "fired up" and answers no real /health: it is
  ready when node 0 is, since node 0 serves only once every node has loaded and captured);
- the deployment's phase: failed if any member failed, else the least advanced member's phase, and ready
  only when every member is ready and the router (if any) has a healthy worker of each kind it needs;
- which member holds the startup back, and which members wait for it (the facts; the line naming them,
  "node1 still loading weights; node0 loaded 64/64, waiting for it", is tui/core/wording.py's);
- the deployment-wide `Readiness` the existing views and `wait`'s exit rules read (tp_size summed over nodes).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from tui.core import srtlayout as srt
from tui.core.capture import current_capture
from tui.core.events import GpuSnapshot
from tui.core.record import record
from tui.core.state import PHASE_ORDER, BarState, Phase, RankState, Readiness, ServerInfo

ROLES = ("node", "prefill", "decode", "router", "server")
SERVER_ROLES = ("node", "prefill", "decode", "server")
READY_PHASES = (Phase.READY, Phase.SERVING)
_ORDER = {phase: i for i, phase in enumerate(PHASE_ORDER)}


@dataclass(frozen=True)
class WorkerHealth:
    """One worker as the router sees it (from its worker-health log lines or its /workers answer)."""

    url: str
    role: str = "regular"  # prefill | decode | regular
    healthy: bool = False


@dataclass(frozen=True)
class RouterInfo:
    """A router member's own facts: its health endpoint answered, and its workers' health."""

    up: bool = False  # GET /health answered 200
    workers: tuple[WorkerHealth, ...] = ()  # from GET /workers
    detail: str = ""  # the last probe's outcome, e.g. "refused"
    log_workers: tuple[WorkerHealth, ...] = ()  # from the router's worker-health log lines

    @property
    def known_workers(self) -> tuple[WorkerHealth, ...]:
        """The endpoint's answer when it gave one, else what the log said."""
        return self.workers or self.log_workers


@dataclass(frozen=True)
class Member:
    """One process group of the deployment, on one host. `state` is that member's own `Readiness`."""

    name: str
    role: str = "server"  # node | prefill | decode | router | server
    host: str = "local"
    state: Readiness = Readiness()
    node_rank: int | None = None  # role node, or a node of a multi-node PD worker: its --node-rank (0 serves HTTP)
    router: RouterInfo | None = None  # role router only
    bootstrap_port: int | None = None  # role prefill: the disaggregation bootstrap port
    bootstrap_open: bool | None = None  # None: not checked yet
    worker: str | None = None  # a node of a PD worker that spans several nodes: the worker, its node 0's name

    @property
    def follower(self) -> bool:
        """A non-zero node: of a multi-node server, or of a PD worker that spans several nodes (srtctl's
        `--nnodes`): it serves no HTTP, its worker's node 0 says when the worker is ready."""
        return (self.role == "node" or self.worker is not None) and self.node_rank not in (None, 0)


@dataclass(frozen=True)
class Deployment:
    members: tuple[Member, ...]
    benchmark: srt.BenchmarkWord | None = None  # an srtctl job's: what its log and benchmark.out say (None: not one)

    def member(self, name: str) -> Member:
        return next(m for m in self.members if m.name == name)

    def with_state(self, name: str, state: Readiness) -> Deployment:
        return self.with_member(replace(self.member(name), state=state))

    def with_member(self, member: Member) -> Deployment:
        return replace(self, members=tuple(member if m.name == member.name else m for m in self.members))

    def with_benchmark(self, word: srt.BenchmarkWord) -> Deployment:
        """srtctl's log and benchmark.out read again, folded over what they said before."""
        return replace(self, benchmark=srt.merged_word(self.benchmark, word))


def nodes(names_hosts: list[tuple[str, str]]) -> Deployment:
    """A multi-node deployment: node0, node1, … in the order given (node 0 first)."""
    return Deployment(tuple(Member(name, "node", host, node_rank=i) for i, (name, host) in enumerate(names_hosts)))


# ------------------------------------------------------------------------------------------------ phases


def _head_node(dep: Deployment, of: Member | None = None) -> Member | None:
    """Node 0 of a multi-node server; with `of`, node 0 of the worker `of` is a node of (its own name)."""
    if of is not None and of.worker is not None:
        return next((m for m in dep.members if m.name == of.worker), None)
    return next((m for m in dep.members if m.role == "node" and m.node_rank == 0), None)


def worker_name(m: Member) -> str:
    """The worker a member is (a node of): `prefill0` for `prefill0.node1`, else its own name."""
    return m.worker or m.name


def leaders(dep: Deployment) -> list[Member]:
    """The members that are one worker each: all but the non-zero nodes of multi-node PD workers."""
    return [m for m in dep.members if not (m.worker is not None and m.follower)]


def worker_members(dep: Deployment, leader: Member) -> list[Member]:
    """A worker's members, its node 0 first (one member for a worker on one node)."""
    return [m for m in dep.members if m is leader or (m.worker is not None and m.worker == leader.name)]


def follows_head(dep: Deployment, m: Member) -> Member | None:
    """Node 0, for a non-zero node with no log of its own (a Slurm job whose nodes all write the batch script's
    one output file, read by node 0): what it does is what node 0's log says. Its own process watch and GPUs
    still count (its state failed is its own)."""
    if m.follower and m.state.log_watched is False:
        head = _head_node(dep, m)
        if head is not None and head is not m and head.state.log_watched:
            return head
    return None


def member_phase(dep: Deployment, m: Member) -> Phase:
    """The member's phase as the deployment sees it."""
    phase = _member_phase(dep, m)
    s = m.state
    unread = s.log_watched and s.log_read_at is None and not s.ranks and not s.log_ready
    if (m.role == "node" or m.worker is not None) and phase in READY_PHASES and unread:
        # a node whose log has not been read yet has not said its ranks or its TP: ready waits for that read
        # (on a loaded host node 0's /health and node 1's processes came before either log's first bytes)
        return Phase.WARMUP
    return phase


def role_counts(dep: Deployment) -> tuple[tuple[str, int, int], ...]:
    """(role, ready, workers) of a PD deployment's prefill and decode workers, in that order; () for any other
    (the board's `2/4P 1/1D`). A worker on several nodes counts once, ready when each of its nodes is."""
    out = []
    for role in ("prefill", "decode"):
        workers = [m for m in leaders(dep) if m.role == role]
        if workers:
            ready = sum(all(member_phase(dep, n) in READY_PHASES for n in worker_members(dep, m)) for m in workers)
            out.append((role, ready, len(workers)))
    return tuple(out)


def _member_phase(dep: Deployment, m: Member) -> Phase:
    s = m.state
    head = follows_head(dep, m)
    if head is not None:
        return Phase.FAILED if s.phase is Phase.FAILED else member_phase(dep, head)
    if m.role == "router":
        if s.phase is Phase.FAILED:
            return Phase.FAILED
        return Phase.READY if m.router is not None and m.router.up else Phase.STARTING
    if m.follower and s.phase is not Phase.FAILED:
        head = _head_node(dep, m)
        if head is not None and head.state.phase in (Phase.WARMUP, *READY_PHASES):
            # node 0 opens HTTP only once every node loaded and captured: this node is as far as node 0, ready
            # only once its own processes are seen alive (it serves no /health of its own: its log and its
            # processes are all that says it still runs)
            return Phase.READY if head.state.phase in READY_PHASES and alive_or_unseen(s) else Phase.WARMUP
        return Phase.CUDA_GRAPH if s.phase in (Phase.WARMUP, *READY_PHASES) else s.phase
    return s.phase


def alive_or_unseen(s: Readiness) -> bool:
    """Its processes were seen alive by the last report, or no watch can see them (readiness then rests on the
    log): a watch that can see and has not found them alive does not let a node be ready."""
    return s.process_alive is True or not s.process_watched or not s.process_visible


def _progress(m: Member) -> float:
    """How far into its current phase a member is, 0..1 (a bar's fraction; 0 when no bar is known)."""
    s = m.state
    bar: BarState | None = None
    if s.phase is Phase.LOADING_WEIGHTS:
        bar = s.shards
    elif s.phase is Phase.CUDA_GRAPH:
        bar = current_capture(s)[1]  # the count each member's own screen shows
    if bar is None or bar.total <= 0:
        return 0.0
    return min(1.0, bar.done / bar.total)


def phase_order(phase: Phase) -> int:
    """How far into the startup a phase is (PHASE_ORDER's index)."""
    return _ORDER[phase]


def rank_key(dep: Deployment, m: Member) -> tuple[int, float]:
    """How far a member is: its phase's order, then its progress in it."""
    return (_ORDER[member_phase(dep, m)], _progress(follows_head(dep, m) or m))


def least_advanced(dep: Deployment) -> Member:
    """The member furthest behind: a failed member first, the one whose own word is the cause before one that
    only says a peer went away (ties: a stalled one, then the first listed)."""
    failed = [m for m in dep.members if member_phase(dep, m) is Phase.FAILED]
    if failed:
        return min(failed, key=lambda m: peer_loss(m.state))
    # ties: a stalled member first (a worker's two nodes in one capture: the one stalled holds it back)
    return min(dep.members, key=lambda m: (rank_key(dep, m), m.state.stall is None))


def peer_loss(s: Readiness) -> bool:
    """A failure that says a peer went away (NCCL, torch.distributed's store or network: kind "nccl"), the word a
    node prints when another node, or the job, ended first; the other's own word (its crash, Slurm's CANCELLED)
    is the deployment's cause once it comes."""
    return s.error is not None and s.error.kind == "nccl"


def router_problem(dep: Deployment) -> str | None:
    """Why the router cannot route yet (None when it can, or when there is no router)."""
    router = next((m for m in dep.members if m.role == "router"), None)
    if router is None:
        return None
    info = router.router or RouterInfo()
    if not info.up:
        return "router not up" + (f" ({info.detail})" if info.detail else "")
    roles = {m.role for m in dep.members}
    needed: list[str] = [r for r in ("prefill", "decode") if r in roles] or ["regular"]
    for role in needed:
        if not any(w.healthy and (w.role == role or role == "regular") for w in info.known_workers):
            return f"router up but has no healthy {role} worker"
    return None


def deployment_phase(dep: Deployment) -> Phase:
    phases = [member_phase(dep, m) for m in dep.members]
    if Phase.FAILED in phases:
        return Phase.FAILED
    if all(p in READY_PHASES for p in phases):
        if router_problem(dep) is not None or bootstrap_problem(dep) is not None:
            return Phase.WARMUP
        servers = [p for m, p in zip(dep.members, phases, strict=True) if m.role in SERVER_ROLES]
        return Phase.SERVING if servers and all(p is Phase.SERVING for p in servers) else Phase.READY
    return min(phases, key=lambda p: _ORDER[p])


def bootstrap_problem(dep: Deployment) -> str | None:
    """A prefill member ready while its bootstrap port is closed (decode cannot reach it)."""
    for m in dep.members:
        if m.role == "prefill" and m.bootstrap_open is False and not m.follower:
            return f"{m.name} ready but its bootstrap port {m.bootstrap_port or 8998} is closed"
    return None


def unconfirmed(dep: Deployment, m: Member) -> bool:
    """A non-zero node held back from ready only because its processes are not seen alive."""
    head = _head_node(dep, m)
    return (
        m.follower
        and head is not None
        and head.state.phase in READY_PHASES
        and m.state.phase is not Phase.FAILED
        and not alive_or_unseen(m.state)
    )


def bar_complete(m: Member) -> bool:
    """A member loading whose shard bar is full: it waits for the others in a collective."""
    s = m.state
    return s.phase is Phase.LOADING_WEIGHTS and s.shards is not None and s.shards.done >= s.shards.total > 0


def tp_size(dep: Deployment) -> int | None:
    """Multi-node: the tensor-parallel size of the whole server (server_args' tp_size is already global; the
    ranks each node showed are summed when a node's server_args are missing). PD: the first server's."""
    servers = [m for m in dep.members if m.role in SERVER_ROLES]
    if not servers:
        return None
    if all(m.role == "node" for m in servers):
        from_args = [m.state.server.tp_size for m in servers if m.state.server.tp_from_args]
        if from_args and all(t is not None for t in from_args):
            return max(t for t in from_args if t is not None)
        counts = [len(m.state.ranks) for m in servers]
        if all(counts):
            return sum(counts)
        sizes = [m.state.server.tp_size for m in servers if m.state.server.tp_size is not None]
        return max(sizes) if sizes else None
    return servers[0].state.server.tp_size


# ----------------------------------------------------------------------------------- deployment-wide view


def gpu_bases(dep: Deployment) -> dict[str, int]:
    """Where each member's GPUs start in the deployment's one GPU list (members in order, each its own GPUs)."""
    bases: dict[str, int] = {}
    base = 0
    for m in dep.members:
        bases[m.name] = base
        gpus = m.state.gpus.gpus if m.state.gpus is not None else ()
        base += max((g.index for g in gpus), default=-1) + 1
    return bases


def gpus(dep: Deployment) -> GpuSnapshot | None:
    """Every member's GPUs in one snapshot, grouped by member (GpuInfo.node) with global indexes."""
    snaps = [(m, m.state.gpus) for m in dep.members if m.state.gpus is not None]
    if not snaps:
        return None
    bases = gpu_bases(dep)
    merged = tuple(replace(g, index=bases[m.name] + g.index, node=m.name) for m, snap in snaps for g in snap.gpus)
    errors = [f"{m.name}: {snap.error}" for m, snap in snaps if snap.error]
    return GpuSnapshot(snaps[0][1].source, merged, "; ".join(errors) or None, snaps[0][1].t)


def _gpu_history(dep: Deployment) -> tuple[tuple[int, tuple[float, ...]], ...]:
    bases = gpu_bases(dep)
    return tuple((bases[m.name] + i, h) for m in dep.members for i, h in m.state.gpu_history)


def _ranks(dep: Deployment) -> tuple[RankState, ...]:
    """Every member's ranks; multi-node ranks carry global labels already, PD ranks get the member's name.
    A rank's GPU is its index in the deployment's one GPU list (see gpus())."""
    out: list[RankState] = []
    seen: set[str] = set()
    bases = gpu_bases(dep)
    for m in dep.members:
        for r in m.state.ranks:
            spread = m.role == "node" or m.worker is not None
            if spread and len(dep.members) > 1 and r.pid is None and r.last_milestone is None:
                continue  # a placeholder for a rank of the server's tp_size that runs on another node
            name = r.name if m.role == "node" else f"{worker_name(m)} {r.name}"
            if name not in seen:
                seen.add(name)
                gpu = bases[m.name] + r.gpu_index if r.gpu_index is not None else None
                out.append(replace(r, name=name, gpu_index=gpu))
    return tuple(out)


def combined(dep: Deployment) -> Combined:
    """One `Readiness` for the whole deployment, read by `wait`'s exit rules and the JSON report: the phase,
    the reason, the error and stall of the member that holds it back, and connection failures of any member."""
    behind = least_advanced(dep)
    head = dep.members[0]
    base = head.state if head.role in SERVER_ROLES else behind.state
    phase = deployment_phase(dep)
    stall = behind.state.stall if phase not in READY_PHASES and phase is not Phase.FAILED else None
    failed_link = next((m for m in dep.members if m.state.connection == "failed"), None)
    connection, detail = base.connection, base.connection_detail
    if failed_link is not None:
        connection, detail = "failed", f"{failed_link.name} ({failed_link.host}): {failed_link.state.connection_detail}"
    lost = sorted((m for m in dep.members if m.state.lost_at is not None), key=lambda m: m.state.lost_at or 0.0)
    if lost and failed_link is None:  # a member whose host is lost: the whole is not ready (tui.core.freshness)
        connection, detail = (
            lost[0].state.connection,
            f"{lost[0].name} ({lost[0].host}): {lost[0].state.connection_detail}",
        )
    shards = behind.state.shards if behind.state.shards is not None else base.shards
    if behind.role == "node" and behind.state.shards is None:
        shards = base.shards  # a non-zero node prints no bar: node 0's is the model's
    server: ServerInfo = replace(base.server, tp_size=tp_size(dep))
    merged = base.evolve(
        phase=phase,
        error=behind.state.error if phase is Phase.FAILED else None,
        stall=replace(stall, detail=f"{behind.name}: {stall.detail}" if stall.detail else behind.name)
        if stall
        else None,
        shards=shards,
        server=server,
        ranks=_ranks(dep),
        gpus=gpus(dep) if len(dep.members) > 1 else base.gpus,
        gpu_history=_gpu_history(dep) if len(dep.members) > 1 else base.gpu_history,
        connection=connection,
        connection_detail=detail,
        lost_at=lost[0].state.lost_at if lost else None,
        lost_by=lost[0].state.lost_by if lost else "",
        log_ready=all(m.state.log_ready for m in dep.members if m.role != "router" and m.node_rank in (None, 0)),
        health_ready=phase in READY_PHASES,
    )
    stuck = phase is Phase.FAILED or stall is not None
    disagrees = srt.disagreement(dep.benchmark, phase in READY_PHASES, stuck)
    failed_member = behind.name if phase is Phase.FAILED and len(dep.members) > 1 else None
    return Combined(**{f.name: getattr(merged, f.name) for f in fields(Readiness)}, deployment=dep,
                    benchmark_disagrees=disagrees, failed_member=failed_member)  # fmt: skip


@record
class Combined(Readiness):
    """The whole deployment as one Readiness, for `wait`'s exit rules, the JSON report and the views. It keeps
    the deployment it stands for, so that its words are the deployment's (which member holds it back, and why:
    tui/core/wording.py), not those of the one state it is built on."""

    deployment: Deployment = Deployment(())
    # an srtctl job's benchmark word against the servers' (None: they agree, or nothing said, or no srtctl job)
    benchmark_disagrees: srt.Disagreement | None = None
    # the member whose failure is the deployment's (None: not failed, or one member: the error is its own)
    failed_member: str | None = None
