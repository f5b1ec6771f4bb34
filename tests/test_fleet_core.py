"""The fleet's pure facts (tui/core/fleet.py): each row's exit code from DESIGN's one table, the worst of several,
when a row has said its first state (a Slurm job: every node), the `/` filter and the sort keys."""

from __future__ import annotations

from typing import Any

from tui.core.clockmap import ClockMap
from tui.core.events import ConnectionState, GpuSnapshot
from tui.core.fleet import FleetEntry, exit_code, first_state_said, matches, sort_key, worst
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness


def _at(phase: Phase, **facts: Any) -> Readiness:
    return Readiness().evolve(phase=phase, **facts)


def test_the_worst_code_wins_and_all_ready_is_zero() -> None:
    assert worst([0, 0, 0]) == 0
    assert worst([0, 7, 3, 0]) == 3  # stalled over still starting
    assert worst([7, 4, 1, 6]) == 1  # a failure over everything
    assert worst([7, 6]) == 6 and worst([7, 4, 6]) == 4
    assert worst([]) == 6  # nothing to watch


def test_each_row_calls_for_its_code() -> None:
    assert exit_code(FleetEntry("a", "h", _at(Phase.READY))) == 0
    assert exit_code(FleetEntry("a", "h", _at(Phase.SERVING))) == 0
    assert exit_code(FleetEntry("a", "h", _at(Phase.FAILED))) == 1
    assert exit_code(FleetEntry("a", "h", _at(Phase.LOADING_WEIGHTS))) == 7
    unreachable = reduce(Readiness(), ConnectionState("failed", "auth"), 1.0)
    assert exit_code(FleetEntry("a", "h", unreachable)) == 4
    assert exit_code(FleetEntry("a", "h", Readiness(), kind="nothing", note="no server")) == 6


def test_a_row_has_said_its_first_state_once_every_source_has_and_a_job_once_every_node_has() -> None:
    # clock: the tail's first look was read (tui.core.firstlook)
    looked = dict(connection="connected", log_watched=True, log_read_at=1.0, clock=ClockMap(), process_watched=True,
                  process_checked_at=1.0, health_probed=False)  # fmt: skip
    said = _at(Phase.READY, **looked, gpus=GpuSnapshot(source="probe", error="no NVML"))
    no_gpus_yet = _at(Phase.READY, **looked)  # ready, but its GPUS cell would still be empty
    unsaid = Readiness().evolve(log_watched=True, connection="connecting")
    assert first_state_said(FleetEntry("a", "h", said))
    assert not first_state_said(FleetEntry("a", "h", no_gpus_yet)) and not first_state_said(
        FleetEntry("a", "h", unsaid)
    )
    assert first_state_said(FleetEntry("a", "h", reduce(Readiness(), ConnectionState("failed", "auth"), 1.0)))
    whole = _at(Phase.LOADING_WEIGHTS)
    assert not first_state_said(FleetEntry("j", "slurm 1: n1,n2", whole, kind="job", parts=(said, unsaid)))
    assert first_state_said(FleetEntry("j", "slurm 1: n1,n2", whole, kind="job", parts=(said, said)))


def test_the_filter_needs_every_word_and_leaves_out_the_banged_ones() -> None:
    assert matches("prod ready", "a0 gpua ready prod")
    assert not matches("prod failed", "a0 gpua ready prod")
    assert not matches("!gpua", "a0 gpua ready prod") and matches("!gpub", "a0 gpua ready prod")
    assert matches("", "anything")


def test_phase_sorts_the_worst_first_and_ties_keep_the_order_given() -> None:
    rows = [
        FleetEntry("ok", "h", _at(Phase.READY), order=0),
        FleetEntry("bad", "h", _at(Phase.FAILED), order=1),
        FleetEntry("mid", "h", _at(Phase.CUDA_GRAPH), order=2),
        FleetEntry("ok2", "h", _at(Phase.READY), order=3),
    ]
    by_phase = sorted(rows, key=lambda e: sort_key("phase", e, 0.0, None))
    assert [e.name for e in by_phase] == ["bad", "mid", "ok", "ok2"]
    by_name = sorted(rows, key=lambda e: sort_key("name", e, 0.0, None))
    assert [e.name for e in by_name] == ["bad", "mid", "ok", "ok2"]
    by_eta = sorted(rows, key=lambda e: sort_key("eta", e, 0.0, {"mid": 5.0}.get(e.name)))
    assert by_eta[0].name == "mid"  # a known ETA first, the unknown ones after in the order given
