"""The deployment model (tui/core/deployment.py): members' own states in, one phase and one verdict out."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tui.core import deployment as dm
from tui.core.report import deployment_json
from tui.core.state import BarState, ErrorInfo, Phase, RankState, Readiness, ServerInfo, StallInfo
from tui.core.wording import deployment_line, verdict_line


def _state(phase: Phase, *, shards: tuple[int, int] | None = None, ranks: range = range(0), tp: int | None = None,
           **kw: Any) -> Readiness:  # fmt: skip
    return Readiness.of(
        phase=phase,
        shards=BarState(*shards) if shards else None,
        ranks=tuple(RankState(f"TP{i}", last_milestone="load_begin") for i in ranks),
        server=ServerInfo(tp_size=tp, tp_from_args=tp is not None),
        **kw,
    )


def _two_nodes(s0: Readiness, s1: Readiness) -> dm.Deployment:
    dep = dm.nodes([("node0", "h0"), ("node1", "h1")])
    return dep.with_state("node0", s0).with_state("node1", s1)


def test_node1_loading_holds_back_and_node0_waits_in_nccl_init() -> None:
    dep = _two_nodes(
        _state(Phase.INIT, ranks=range(8)), _state(Phase.LOADING_WEIGHTS, shards=(40, 64), ranks=range(8, 16))
    )
    assert dm.deployment_phase(dep) is Phase.INIT
    assert dm.least_advanced(dep).name == "node0"
    dep = _two_nodes(_state(Phase.LOADING_WEIGHTS, shards=(64, 64)), _state(Phase.LOADING_WEIGHTS, shards=(40, 64)))
    assert dm.least_advanced(dep).name == "node1"
    assert deployment_line(dep) == "node1 still loading weights 40/64; node0 loaded 64/64, waiting for node1"


def test_node0_in_init_waits_for_a_missing_node() -> None:
    dep = _two_nodes(_state(Phase.INIT), _state(Phase.STARTING))
    assert deployment_line(dep) == "node1 not started yet; node0 waiting for node1 in NCCL init"
    assert dm.deployment_phase(dep) is Phase.STARTING


def test_nonzero_node_is_ready_when_node0_is_and_tp_sums_over_nodes() -> None:
    s0 = _state(Phase.READY, ranks=range(8), log_ready=True, health_ready=True)
    s1 = _state(Phase.CUDA_GRAPH, ranks=range(8, 16))
    dep = _two_nodes(s0, s1)
    assert dm.member_phase(dep, dep.member("node1")) is Phase.READY
    assert dm.deployment_phase(dep) is Phase.READY
    assert dm.tp_size(dep) == 16
    out = deployment_json(dep)
    assert out["phase"] == "ready" and out["tp_size"] == 16
    assert list(out["ranks"]) == [f"TP{i}" for i in range(16)]  # type: ignore[call-overload]
    assert [m["name"] for m in out["members"]] == ["node0", "node1"]  # type: ignore[attr-defined]
    assert set(out["members"][0]) == {"name", "role", "host", "phase", "shards", "error", "reason"}


def test_server_args_tp_size_is_global_already() -> None:
    dep = _two_nodes(_state(Phase.LOADING_WEIGHTS, tp=16, ranks=range(8)), _state(Phase.LOADING_WEIGHTS, tp=16))
    assert dm.tp_size(dep) == 16


def test_a_nonzero_node_that_runs_ahead_is_not_ready_before_node0() -> None:
    dep = _two_nodes(_state(Phase.CUDA_GRAPH), _state(Phase.WARMUP))
    assert dm.member_phase(dep, dep.member("node1")) is Phase.CUDA_GRAPH
    assert dm.deployment_phase(dep) is Phase.CUDA_GRAPH
    dep = _two_nodes(_state(Phase.WARMUP), _state(Phase.CUDA_GRAPH))  # node 0's HTTP is up: every node is done
    assert dm.member_phase(dep, dep.member("node1")) is Phase.WARMUP


def test_a_node_without_a_bar_in_the_same_phase_is_not_waited_for() -> None:
    dep = _two_nodes(_state(Phase.LOADING_WEIGHTS, shards=(10, 64)), _state(Phase.LOADING_WEIGHTS))
    assert deployment_line(dep) == "node1 still loading weights; node0 still loading weights 10/64"


def test_failed_member_fails_the_deployment_and_is_named() -> None:
    err = ErrorInfo("oom", "torch.OutOfMemoryError: CUDA out of memory.")
    dep = _two_nodes(_state(Phase.LOADING_WEIGHTS, shards=(64, 64)), _state(Phase.FAILED, error=err))
    c = dm.combined(dep)
    assert c.phase is Phase.FAILED and c.error == err
    assert verdict_line(c).startswith("node1 failed (out of memory)")
    assert deployment_json(dep)["members"][1]["error"] == {"kind": "oom", "line": err.line}


def test_stall_of_the_member_behind_is_the_deployments_and_names_it() -> None:
    stall = StallInfo(since=0.0, limit_s=60.0, detail="no progress for 90 s")
    dep = _two_nodes(_state(Phase.LOADING_WEIGHTS, shards=(64, 64)), _state(Phase.LOADING_WEIGHTS, stall=stall))
    c = dm.combined(dep)
    assert c.stall is not None and c.stall.detail.startswith("node1")
    assert verdict_line(c).startswith("stalled in loading weights: node1 stalled loading weights")
    # a node ahead that is stalled (waiting in a collective) while the one behind still moves: no stall
    dep = _two_nodes(_state(Phase.LOADING_WEIGHTS, shards=(64, 64), stall=stall), _state(Phase.LOADING_WEIGHTS))
    assert dm.combined(dep).stall is None


def test_connection_failure_of_any_node_is_the_deployments() -> None:
    dep = _two_nodes(_state(Phase.INIT), _state(Phase.STARTING, connection="failed", connection_detail="auth"))
    c = dm.combined(dep)
    assert c.connection == "failed" and "node1" in c.connection_detail


def _pd(prefill: Readiness, decode: Readiness, router: dm.RouterInfo) -> dm.Deployment:
    return dm.Deployment((
        dm.Member("decode", "decode", "d", decode),
        dm.Member("prefill", "prefill", "p", prefill, bootstrap_port=8998),
        dm.Member("router", "router", "r", router=router),
    ))  # fmt: skip


READY = _state(Phase.READY, log_ready=True, health_ready=True)


def test_pd_prefill_loading_router_up_is_not_ready_and_names_prefill() -> None:
    router = dm.RouterInfo(
        up=True, workers=(dm.WorkerHealth("http://d", "decode", True), dm.WorkerHealth("http://p", "prefill", False))
    )
    dep = _pd(_state(Phase.LOADING_WEIGHTS, shards=(30, 64)), READY, router)
    assert dm.deployment_phase(dep) is Phase.LOADING_WEIGHTS
    assert (
        deployment_line(dep)
        == "decode ready, prefill still loading weights 30/64, router up but has no healthy prefill worker"
    )
    assert dm.least_advanced(dep).name == "prefill"


def test_pd_all_up_but_router_sees_no_healthy_prefill_is_not_ready() -> None:
    router = dm.RouterInfo(
        up=True, workers=(dm.WorkerHealth("http://d", "decode", True), dm.WorkerHealth("http://p", "prefill", False))
    )
    dep = _pd(READY, READY, router)
    assert dm.deployment_phase(dep) is Phase.WARMUP
    assert "no healthy prefill worker" in deployment_line(dep)


def test_pd_all_up_is_ready() -> None:
    router = dm.RouterInfo(
        up=True, workers=(dm.WorkerHealth("http://d", "decode", True), dm.WorkerHealth("http://p", "prefill", True))
    )
    dep = _pd(READY, READY, router)
    assert dm.deployment_phase(dep) is Phase.READY
    assert deployment_line(dep).startswith("ready: decode ready, prefill ready, router up, 2/2 workers healthy")
    closed = dep.with_member(replace(dep.member("prefill"), bootstrap_open=False))
    assert dm.deployment_phase(closed) is Phase.WARMUP
    assert "bootstrap port 8998 is closed" in deployment_line(closed)


def test_router_down_is_starting() -> None:
    dep = _pd(READY, READY, dm.RouterInfo(up=False, detail="refused"))
    assert dm.deployment_phase(dep) is Phase.STARTING
    assert deployment_line(dep).endswith("router not up (refused)")


def test_router_workers_from_its_log_count_when_the_endpoint_lists_none() -> None:
    logged = (dm.WorkerHealth("http://d", "decode", True), dm.WorkerHealth("http://p", "prefill", True))
    dep = _pd(READY, READY, dm.RouterInfo(up=True, log_workers=logged))
    assert dm.deployment_phase(dep) is Phase.READY
    listed = (dm.WorkerHealth("http://p", "prefill", False),)
    dep = _pd(READY, READY, dm.RouterInfo(up=True, workers=listed, log_workers=logged))  # the endpoint wins
    assert dm.deployment_phase(dep) is Phase.WARMUP


def test_gpus_of_all_nodes_in_one_list_grouped_by_node_with_global_indexes() -> None:
    from tui.core.events import GpuInfo, GpuSnapshot

    snap = GpuSnapshot("sim", tuple(GpuInfo(i, used_bytes=i) for i in range(8)))
    s0 = _state(Phase.INIT).evolve(gpus=snap, ranks=(RankState("TP0", gpu_index=0, pid=1),))
    s1 = _state(Phase.INIT).evolve(
        gpus=snap,
        ranks=(
            RankState("TP8", gpu_index=0, pid=2),
            RankState("TP15", gpu_index=7, pid=3),
            RankState("TP1", gpu_index=1),
        ),
    )
    c = dm.combined(_two_nodes(s0, s1))
    assert c.gpus is not None and [g.index for g in c.gpus.gpus] == list(range(16))
    assert [g.node for g in c.gpus.gpus] == ["node0"] * 8 + ["node1"] * 8
    assert {r.name: r.gpu_index for r in c.ranks} == {"TP0": 0, "TP8": 8, "TP15": 15}


def test_a_node_that_only_says_its_peer_went_away_is_not_the_cause() -> None:
    """node 0 cancelled by Slurm, node 1's NCCL store gone because of it: the deployment's failure is node 0's
    (whichever is listed first); with only the peer's loss known, that is what it says."""
    gone = ErrorInfo(kind="nccl", line="torch.distributed.DistNetworkError: Connection reset by peer")
    cancelled = ErrorInfo(kind="slurm_job", line="slurm job 7 CANCELLED")
    loading = _state(Phase.LOADING_WEIGHTS, shards=(3, 8))
    dep = _two_nodes(loading, _state(Phase.FAILED, error=gone))
    assert dm.least_advanced(dep).name == "node1" and dm.combined(dep).error == gone
    dep = _two_nodes(_state(Phase.FAILED, error=cancelled), _state(Phase.FAILED, error=gone))
    assert dm.least_advanced(dep).name == "node0" and dm.combined(dep).error == cancelled
    dep = dm.nodes([("node1", "h1"), ("node0", "h0")])  # listed the other way round
    dep = dep.with_state("node0", _state(Phase.FAILED, error=cancelled)).with_state(
        "node1", _state(Phase.FAILED, error=gone)
    )
    assert dm.least_advanced(dep).name == "node0"
