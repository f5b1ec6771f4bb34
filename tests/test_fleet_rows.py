"""The fleet board's one mapping from a row's state to its PHASE cell, colour and summary bucket
(tui/ui/fleet_rows.row_state): what a person must act on in capitals (STALLED, FAILED with its cause, UNREACHABLE,
STOPPED), a stop never counted as a failure, the calm states as the phase says them; and the header's STOPPED for
a signal from another shell, as for a stop by sglang-tui."""

from __future__ import annotations

import pytest

from tui.core.explain import PROCESS_EXITED
from tui.core.fleet import FleetEntry
from tui.core.state import ErrorInfo, Phase, Readiness, StallInfo
from tui.ui.fleet_rows import BUCKETS, cells, row_state
from tui.ui.labels import phase_label

CONNECTED = Readiness.of(connection="connected")


def _entry(state: Readiness, kind: str = "server") -> FleetEntry:
    return FleetEntry("a", "gpu1", state, kind=kind)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "word", "bucket"),
    [
        (CONNECTED.evolve(phase=Phase.FAILED, error=ErrorInfo("oom", "torch.OutOfMemoryError: CUDA out of memory")),
         "FAILED (out of memory)", "failed"),
        (CONNECTED.evolve(phase=Phase.FAILED, error=ErrorInfo("other", PROCESS_EXITED)), "FAILED (exited)", "failed"),
        (CONNECTED.evolve(phase=Phase.FAILED, error=ErrorInfo("other", "killed by SIGTERM", stopped_by="outside")),
         "STOPPED", "stopped"),
        (CONNECTED.evolve(phase=Phase.LOADING_WEIGHTS, stall=StallInfo(0.0, 180.0)), "STALLED in loading weights",
         "stalled"),
        (Readiness.of(connection="failed", connection_detail="gpu9: name not known"), "UNREACHABLE", "unreachable"),
        (CONNECTED.evolve(phase=Phase.CUDA_GRAPH), "CUDA graph capture", "starting"),
        (CONNECTED.evolve(phase=Phase.SERVING), "serving", "ready"),
    ],
)  # fmt: skip
def test_the_state_first_in_its_own_words_and_bucket(state: Readiness, word: str, bucket: str) -> None:
    found = row_state(_entry(state))
    assert (found.word, found.bucket) == (word, bucket)
    assert cells(_entry(state), 0.0)["phase"] == word
    assert bucket in dict(BUCKETS)


def test_the_states_that_need_someone_have_colours_of_their_own() -> None:
    styles = {
        row_state(_entry(s)).style
        for s in (
            CONNECTED.evolve(phase=Phase.FAILED, error=ErrorInfo("oom", "x")),
            CONNECTED.evolve(phase=Phase.INIT, stall=StallInfo(0.0, 60.0)),
            Readiness.of(connection="failed"),
            CONNECTED.evolve(phase=Phase.FAILED, error=ErrorInfo("other", "x", stopped_by="outside")),
            CONNECTED.evolve(phase=Phase.READY),
            CONNECTED.evolve(phase=Phase.INIT),
        )
    }
    assert len(styles) == 6  # failed, stalled, unreachable, stopped, ready, starting: each its own


def test_a_row_with_nothing_to_watch_says_so() -> None:
    assert row_state(_entry(Readiness(), kind="nothing")).bucket == "nothing"


def test_a_stop_from_another_shell_reads_stopped_in_the_header_too() -> None:
    outside = CONNECTED.evolve(phase=Phase.FAILED, error=ErrorInfo("other", "killed by SIGTERM", stopped_by="outside"))
    assert phase_label(outside) == "STOPPED"
    assert phase_label(CONNECTED.evolve(phase=Phase.FAILED, error=ErrorInfo("oom", "x"))) == "FAILED"


def test_a_pd_deployments_phase_cell_counts_its_workers_ready_of_each_role() -> None:
    """An srtctl job's row: the worst member's state, then `ready/members` per role (`2/4P 1/1D`)."""
    from tui.core import deployment as dm

    def worker(name: str, role: str, phase: Phase) -> dm.Member:
        return dm.Member(name, role, "n1", CONNECTED.evolve(phase=phase))

    members = (
        *(worker(f"prefill_w{i}", "prefill", Phase.SERVING) for i in range(2)),
        *(worker(f"prefill_w{i}", "prefill", Phase.LOADING_WEIGHTS) for i in (2, 3)),
        worker("decode_w0", "decode", Phase.READY),
    )
    dep = dm.Deployment(members)
    assert dm.role_counts(dep) == (("prefill", 2, 4), ("decode", 1, 1))
    row = cells(FleetEntry("job", "slurm 42: n1", dm.combined(dep), kind="job"), 0.0)
    assert row["phase"] == "loading weights 2/4P 1/1D", row
    plain = dm.Deployment((worker("n0", "node", Phase.READY),))
    assert dm.role_counts(plain) == () and cells(_entry(dm.combined(plain)), 0.0)["phase"] == "ready"


def test_a_failed_rows_status_says_its_remedys_short_form_first() -> None:
    """The board's STATUS of a failure with a known remedy: what to change first (a narrow board cuts the cell's
    end), then the failure's line (issue 34)."""
    import io

    from tests.test_ui_remedy import FAILED_CAPTURE
    from tui.commands.replay import replay_stream

    failed = replay_stream(io.BytesIO(FAILED_CAPTURE.encode())).evolve(connection="connected")
    status = cells(_entry(failed), 0.0)["status"]
    assert status.startswith("failed (out of memory): try --cuda-graph-max-bs-decode 80 --mem-fraction-static 0.80 · ")
    assert "Capture cuda graph failed: CUDA out of memory" in status, status
    plain = CONNECTED.evolve(phase=Phase.FAILED, error=ErrorInfo("other", "something odd"))
    assert "try" not in cells(_entry(plain), 0.0)["status"]  # no remedy known: nothing made up


def test_a_failed_deployments_status_names_the_member_that_failed() -> None:
    """An srtctl job's row (issue 36): the worker whose failure is the deployment's comes first in STATUS, the
    fact the fold made (Combined.failed_member); one server's row names nobody."""
    from tui.core import deployment as dm

    oom = CONNECTED.evolve(phase=Phase.FAILED, error=ErrorInfo("oom", "torch.OutOfMemoryError: CUDA out of memory."))
    up = CONNECTED.evolve(phase=Phase.READY)
    dep = dm.Deployment((dm.Member("prefill0", "prefill", "n1", up), dm.Member("prefill1", "prefill", "n1", oom),
                         dm.Member("decode0", "decode", "n2", up)))  # fmt: skip
    status = cells(FleetEntry("job", "slurm 42: n1,n2", dm.combined(dep), kind="job"), 0.0)["status"]
    assert status.startswith("prefill1 failed (out of memory): "), status
    one = dm.combined(dm.Deployment((dm.Member("n0", "node", "n1", oom),)))
    assert one.failed_member is None and cells(_entry(one), 0.0)["status"].startswith("failed (out of memory): ")
