"""The pure half of the Slurm job's state each cycle: one squeue look parsed (as slurm-wlm 22.05 printed it on the
test cluster), folded by the reducer (queued before starting, Slurm's word when the job ends, requeue kept
apart), and said ("queued: Resources, 3m10s in queue, Slurm expects it to start in 5m00s"). That Slurm itself
says so is checked on the real cluster: tests/test_slurm_jobstate.py."""

from __future__ import annotations

import pytest

from tui.core import slurmjob as sj
from tui.core.events import SlurmJobState
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.core.verdict import decide
from tui.core.wording import verdict_line

LOOK = (
    "1|CANCELLED|None|2026-12-06T11:37:08|2026-12-06T11:37:08|sgtn[1-2]|(null)\n"
    "4|PENDING|BeginTime|2026-12-06T11:37:18|2026-12-06T11:47:18||(null)\n"
    "3|PENDING|JobHeldUser|2026-12-06T11:37:18|N/A||(null)\n"
    "2|RUNNING|None|2026-12-06T11:37:08|2026-12-06T11:37:08|sgtn[1-2]|sglang-tui stop\n"
    "SGLANG_TUI_NOW 0 2026-12-06T11:40:18\n"
)


def test_one_look_gives_every_job_its_state_and_times() -> None:
    jobs = sj.parse_queue(LOOK, ["1", "2", "3", "4", "99"])
    assert jobs["1"] == SlurmJobState("1", "CANCELLED", nodes="sgtn[1-2]")
    assert jobs["4"] == SlurmJobState("4", "PENDING", "BeginTime", queued_s=180.0, starts_in_s=420.0)
    assert jobs["3"] == SlurmJobState("3", "PENDING", "JobHeldUser", queued_s=180.0, starts_in_s=None)
    assert jobs["2"].state == "RUNNING" and jobs["2"].ours and jobs["2"].queued_s is None
    assert jobs["99"] == SlurmJobState("99", "GONE")  # squeue no longer lists it


def test_a_look_at_jobs_slurm_forgot_is_gone_and_a_failed_squeue_is_an_error() -> None:
    forgot = "slurm_load_jobs error: Invalid job id specified\nSGLANG_TUI_NOW 1 2026-12-06T11:40:18\n"
    assert sj.parse_queue(forgot, ["7"]) == {"7": SlurmJobState("7", "GONE")}
    down = "squeue: error: Unable to contact slurm controller (connect failure)\nSGLANG_TUI_NOW 1 2026-12-06T11:40:18\n"
    with pytest.raises(sj.QueueLookError, match="Unable to contact slurm controller"):
        sj.parse_queue(down, ["7"])
    with pytest.raises(sj.QueueLookError):
        sj.parse_queue("", ["7"])  # the shell gave nothing: no look


def test_the_command_asks_once_for_every_job_quoted() -> None:
    command = sj.queue_command(["12", "13"])
    assert command.count("squeue ") == 1 and "-j 12,13 " in command and "-t all" in command


def _queued(now: float = 1000.0) -> Readiness:
    job = SlurmJobState("12", "PENDING", "Resources", queued_s=190.0, starts_in_s=300.0)
    return reduce(Readiness.of(stall_after=1.0), job, now)


def test_pending_is_queued_said_with_slurms_reason_and_expected_start_and_never_stalls() -> None:
    s = _queued()
    assert s.phase is Phase.QUEUED and decide(s).kind == "starting" and decide(s).code is None
    assert verdict_line(s, 1000.0) == "queued: Resources, 3m10s in queue, Slurm expects it to start in 5m00s"
    later = reduce(s, SlurmJobState("12", "PENDING", "Resources", queued_s=250.0), 1060.0)  # --stall-after 1
    assert later.stall is None and verdict_line(later, 1070.0) == "queued: Resources, 4m20s in queue"


def test_running_leaves_the_queue_and_an_end_is_slurms_word() -> None:
    s = reduce(_queued(), SlurmJobState("12", "RUNNING"), 1010.0)
    assert s.phase is Phase.STARTING
    ended = reduce(s, SlurmJobState("12", "NODE_FAIL", "NodeDown"), 1020.0)
    v = decide(ended)
    assert v.kind == "failed" and v.code == 1 and v.error is not None and v.error.kind == "slurm_job"
    assert verdict_line(ended) == "failed (Slurm): slurm job 12 NODE_FAIL (NodeDown)"  # no phase the log showed


def test_an_end_in_the_queue_says_so_and_ours_is_stopped() -> None:
    cancelled = reduce(_queued(), SlurmJobState("12", "CANCELLED"), 1010.0)
    assert verdict_line(cancelled) == "failed in the queue (Slurm): slurm job 12 CANCELLED"
    ours = reduce(_queued(), SlurmJobState("12", "CANCELLED", ours=True), 1010.0)
    assert decide(ours).kind == "stopped" and decide(ours).code == 1


def test_the_logs_own_failure_stays_the_cause_and_a_requeue_does_not_touch_a_running_launch() -> None:
    from tui.core.events import Failure

    s = reduce(reduce(_queued(), SlurmJobState("12", "RUNNING"), 1010.0), Failure("oom", "CUDA out of memory"), 1011.0)
    after = reduce(s, SlurmJobState("12", "OUT_OF_MEMORY"), 1012.0)
    assert after.error is not None and after.error.kind == "oom"
    running = reduce(_queued(), SlurmJobState("12", "RUNNING"), 1010.0).evolve(launched=True)
    requeued = reduce(running, SlurmJobState("12", "PENDING", "BeginTime", queued_s=1.0), 1020.0)
    assert requeued.phase is Phase.STARTING and requeued.slurm_job is not None
