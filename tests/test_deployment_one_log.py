"""A multi-node server whose nodes all write ONE log (a Slurm job's batch output, read on node 0): the other
nodes, with no log of their own, are what node 0's log says (tui/core/deployment.follows_head), and their own
failure still counts."""

from __future__ import annotations

from tui.core import deployment as dm
from tui.core.state import BarState, ErrorInfo, Phase, Readiness, StallInfo
from tui.core.wording import member_words


def _dep(s0: Readiness, s1: Readiness) -> dm.Deployment:
    return dm.nodes([("node0", "n1"), ("node1", "n2")]).with_state("node0", s0).with_state("node1", s1)


HEAD = Readiness.of(phase=Phase.LOADING_WEIGHTS, shards=BarState(3, 8), log_watched=True)
LOGLESS = Readiness.of(log_watched=False, process_watched=True)  # starting: it reads no log


def test_a_node_without_a_log_follows_node0() -> None:
    dep = _dep(HEAD, LOGLESS)
    assert dm.member_phase(dep, dep.member("node1")) is Phase.LOADING_WEIGHTS
    assert dm.deployment_phase(dep) is Phase.LOADING_WEIGHTS
    assert dm.least_advanced(dep).name == "node0"  # not "node1 not started yet": it cannot say
    assert member_words(dep, dep.member("node1")) == "still loading weights 3/8 (in node0's log)"
    stalled = _dep(HEAD.evolve(stall=StallInfo(0.0, 3.0, "last progress: GPU memory")), LOGLESS)
    assert dm.combined(stalled).stall is not None and dm.combined(stalled).stall.detail.startswith("node0")
    ready = _dep(Readiness.of(phase=Phase.READY, log_watched=True, log_ready=True, health_ready=True), LOGLESS)
    assert dm.deployment_phase(ready) is Phase.READY


def test_its_own_failure_is_its_own_and_a_node_with_a_log_keeps_its_own_phase() -> None:
    dead = LOGLESS.evolve(phase=Phase.FAILED, error=ErrorInfo("other", "server processes gone"))
    dep = _dep(HEAD, dead)
    assert dm.deployment_phase(dep) is Phase.FAILED and dm.least_advanced(dep).name == "node1"
    own = _dep(HEAD, Readiness.of(phase=Phase.INIT, log_watched=True))
    assert dm.member_phase(own, own.member("node1")) is Phase.INIT  # a log of its own: its own phase
    assert dm.follows_head(own, own.member("node1")) is None
