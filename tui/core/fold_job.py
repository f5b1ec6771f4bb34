"""The Slurm job a server runs in, folded each cycle (tui/sources/slurm.py looks at the queue once a cycle for
every job): PENDING is the `queued` phase (before `starting`: nothing of the server can run yet), RUNNING
after it is `starting`, and a job that ended (CANCELLED, FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED,
…) ends the launch with Slurm's own word: failed, or stopped when sglang-tui cancelled it. A failure the log
already gave (its OOM line, its NCCL error) stays the cause: the job's end is what followed it.
"""

from __future__ import annotations

from tui.core.events import SlurmJobState
from tui.core.fold_phase import fail
from tui.core.state import ErrorInfo, Phase, Readiness
from tui.core.timeline import enter_phase

# Slurm's words for a job that waits for its nodes (squeue's long state names): the server cannot run yet.
QUEUED_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "RESV_DEL_HOLD"})
# Slurm's words for a job that ended: nothing of the server runs any more. GONE: Slurm no longer knows the job.
ENDED_STATES = frozenset({
    "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE",
    "COMPLETED", "SPECIAL_EXIT", "REVOKED", "GONE",
})  # fmt: skip


def queue_state(stall_after: float | None = None) -> Readiness:
    """The first state of a job not running yet: the link to Slurm is up, no log or port is watched (nothing of
    the server runs), so the first look at the queue says all there is."""
    return Readiness.of(
        stall_after=stall_after, connection="connected", health_probed=False, log_watched=False, process_watched=False
    )


def job_ended(job: SlurmJobState) -> bool:
    return job.state in ENDED_STATES


def job_queued(job: SlurmJobState) -> bool:
    return job.state in QUEUED_STATES


def on_slurm_job(s: Readiness, ev: SlurmJobState, now: float) -> Readiness:
    s = s.evolve(slurm_job=ev, slurm_job_at=now)
    if job_queued(ev):
        if s.phase in (Phase.STARTING, Phase.QUEUED) and not s.launched and not s.timeline:
            # in the queue since the (latest) submit as Slurm says it, else since the first look that saw it wait
            if ev.queued_s is not None and ev.queued_s >= 0:
                since = now - ev.queued_s
            else:
                since = s.phase_since if s.phase is Phase.QUEUED else now
            return s.evolve(phase=Phase.QUEUED, phase_since=since)
        return s
    if job_ended(ev):
        if s.phase is Phase.FAILED:
            return s
        error = ErrorInfo(
            kind="slurm_job", line=ended_words(ev), root_cause=True,
            stopped_by="sglang-tui" if ev.ours else "", action="stop" if ev.ours else None,
        )  # fmt: skip
        if s.phase is Phase.QUEUED and not s.timeline:  # it ended in the queue: the failure says so
            s = s.evolve(timeline=enter_phase((), Phase.QUEUED, None, None, s.phase_since))
        return fail(s, None, None, now, logged=False).evolve(error=error)
    if s.phase is Phase.QUEUED:  # it left the queue: the server can start now
        return s.evolve(phase=Phase.STARTING, phase_since=now)
    return s


def ended_words(ev: SlurmJobState) -> str:
    """`slurm job 12 CANCELLED`, with Slurm's reason when it gives one ("slurm job 12 NODE_FAIL (NodeDown)")."""
    if ev.state == "GONE":
        return f"slurm job {ev.job_id} is gone: Slurm no longer knows it (it ended)"
    why = f" ({ev.reason})" if ev.reason and ev.reason != "None" else ""
    return f"slurm job {ev.job_id} {ev.state}{why}"
