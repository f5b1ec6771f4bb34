"""The verdict in words, said once: the header's verdict line, `wait`'s progress and last lines, the JSON
`reason`, the notifications, the copied report and the deployment view all take their line from here, and no
code rewords it afterwards. Text only: facts in (tui/core/verdict.py's Verdict and the state), words out.

`verdict_line(state, now)` is the line; `ended_line(verdict, state)` says a verdict a command ends with (timed
out, nothing found, …); `deployment_line(dep)` and `member_words(dep, m)` say a deployment and its members.
A startup under way is said by tui/core/explain.py's per-phase words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.core import fmt
from tui.core.answerer import identity, printable
from tui.core.capture import current_capture
from tui.core.explain import (
    PROCESS_EXITED,
    STOPPED_BY_TOOL,
    STOPPED_FROM_OUTSIDE,
    at_words,
    behind_suffix,
    decode_words,
    from_processes,
    gone_suffix,
    history_suffix,
    log_file_line,
    progress_words,
    rendezvous,
    tail_words,
    unseen_suffix,
)
from tui.core.failurenotes import kind_words_of, note_of
from tui.core.freshness import lost_words
from tui.core.names import kind_words, phase_words
from tui.core.stall import describe
from tui.core.state import Phase, Readiness
from tui.core.verdict import HOOK_WORDS, Verdict, decide

if TYPE_CHECKING:  # loaded where deployments are (a probe of one server loads none: issue 32)
    from tui.core import deployment as dm

ENDED_KINDS = ("timed_out", "nothing_found", "cannot_see")  # verdicts a command ends with (verdict.ended)


def verdict_line(state: Readiness, now: float | None = None) -> str:
    """The one line of the verdict at clock time `now` (default: the last event's): what the header shows, the
    JSON `reason`, `wait`'s last line. A deployment's combined state says the deployment's line."""
    deployment = _deployment(state)
    if deployment is not None:
        return deployment_line(deployment)
    return line(decide(state), state, state.updated_at if now is None else now)


def _deployment(state: Readiness) -> dm.Deployment | None:
    """The deployment a deployment's combined state (tui.core.deployment.Combined) stands for; None for a server's
    state, which has no such field."""
    found: dm.Deployment | None = getattr(state, "deployment", None)
    return found


def line(v: Verdict, s: Readiness, now: float) -> str:
    """The words of verdict `v` of state `s` (a deployment's combined state: the deployment's line)."""
    deployment = _deployment(s)
    if deployment is not None and v.kind not in ENDED_KINDS:
        return deployment_line(deployment)
    if v.kind == "starting" and s.phase is Phase.QUEUED:
        return queued_words(s, now)
    if v.kind == "starting":
        return progress_words(s, now)
    if v.kind in ("ready", "serving"):
        return _up_words(s, now)
    if v.kind == "stalled" and v.stall is not None:
        where = phase_words(s.phase)
        text = f"stalled in {where}: {describe(v.stall, where, now)}"
        waiting = rendezvous(s)
        return text + (f"; {waiting}" if waiting else "") + tail_words(s)
    if v.kind == "stopped":
        return _stopped_words(v, s)
    if v.kind == "failed":
        return _failed_words(v, s)
    if v.kind == "cannot_connect":
        return lost_words(s, now) if s.lost_at is not None else f"cannot connect: {v.detail}"
    if v.kind == "bad_arguments" and s.log_file is not None:
        return f"{log_file_line(s.log_file)}; pass the log file inside it"
    return ended_line(v, s)


def queued_words(s: Readiness, now: float) -> str:
    """A Slurm job in the queue: "queued: Resources, 3m10s in queue, Slurm expects it to start in 5m00s"."""
    job = s.slurm_job
    if job is None:
        return "queued"
    looked = now - s.slurm_job_at if s.slurm_job_at is not None else 0.0
    why = job.reason if job.reason and job.reason != "None" else job.state.lower()
    text = f"queued: {why}, {fmt.duration(max(0.0, now - s.phase_since))} in queue"
    if job.starts_in_s is not None and job.starts_in_s - looked > 0:
        text += f", Slurm expects it to start in {fmt.duration(job.starts_in_s - looked)}"
    return text + (f" (slurm job {job.job_id}, restart {job.restarts})" if job.restarts else "")


def _up_words(s: Readiness, now: float) -> str:
    """Ready or serving: which facts it rests on, and what is odd about it (a forwarder, a gone process)."""
    text = _ready_words(s) if s.phase is Phase.READY else _serving_words(s)
    text += behind_suffix(s) + gone_suffix(s) + unseen_suffix(s)
    return text + history_suffix(s, now) if s.past is not None else text


def _ready_words(s: Readiness) -> str:
    if s.log_ready and s.health_ready:
        return "ready: the log says fired up and /health answers 200"
    if s.log_ready:
        if s.health_probed is False:
            return "ready: the log says fired up (log only: /health is not probed, --no-health)"
        return "ready: the log says fired up (log only: no health probe)"
    if s.log_health is not None and not s.health_ready:
        where = (
            "log only: no health probe" if s.health_probed is None else "log only: /health is not probed, --no-health"
        )
        return f"ready: the log shows /health answered 200{at_words(s.log_health.at)} ({where}; no launch in view)"
    ident = identity(s)
    if ident is not None and ident.outcome == "ok" and ident.model_path:
        names = f"{ident.endpoint} names {printable(ident.model_path)}"
        return f"ready: /health answers 200 and {names} (the log has not said fired up)"
    return "ready: /health answers 200 (the log has not said fired up)"


def _serving_words(s: Readiness) -> str:
    if s.eplb_rebalancing:
        return "serving: EPLB rebalancing experts (transient, not a failure)"
    figures = decode_words(s.decode) if s.decode is not None else ""
    return f"serving: {figures}" if figures else "serving"


def _failed_words(v: Verdict, s: Readiness) -> str:
    """Failed: in which phase, what kind, and the line that says why (the log's, or the reducer's own when the
    processes said it)."""
    error = v.error
    if error is None:
        return "failed"
    if from_processes(error) and error.line == PROCESS_EXITED:
        if s.process_alive:
            return "failed: the server process exited; a new one runs, waiting for its launch in the log"
        return f"failed: {PROCESS_EXITED}, with no failure line in the log (a dead process, not a stall)"
    kind = kind_words_of(error) or kind_words(error.kind)
    note = note_of(error)
    return f"failed{_during(v.phase)} ({kind}): {error.line.strip()}" + (f"; {note}" if note else "")


def _during(phase: Phase | None) -> str:
    """ " in loading weights", " once ready", " while serving": when a failure came ("" when not known)."""
    if phase is None:
        return ""
    during = {Phase.QUEUED: " in the queue", Phase.READY: " once ready", Phase.SERVING: " while serving"}
    return during.get(phase, f" in {phase_words(phase)}")


def _stopped_words(v: Verdict, s: Readiness) -> str:
    """Stopped: by sglang-tui (which action, during which phase), or by a signal from outside (its line)."""
    if v.stopped_by == "sglang-tui":
        during = f" during {phase_words(v.phase)}" if v.phase is not None else ""
        return f"{STOPPED_BY_TOOL} ({v.action or 'stop'}){during}"
    line_ = v.error.line.strip() if v.error is not None else ""
    gone = "" if s.process_alive is not False else "; no process of the server is left"
    return f"{STOPPED_FROM_OUTSIDE}: {line_}{gone}"


def ended_line(v: Verdict, s: Readiness | None = None) -> str:
    """A verdict a command ends with: timed out (in which phase, and the state's own line), nothing found, cannot
    see, cannot connect, bad arguments (each with what it found: `detail`)."""
    if v.kind == "timed_out":
        after = f"timed out after {fmt.duration(v.after_s)}"
        if s is None:
            return f"{after}{': ' + v.detail if v.detail else ''}"
        said = verdict_line(s)
        if v.within is not None and v.within.kind in ("ready", "serving"):
            return f"{after}: ready, but not confirmed alive since: {said}"
        return f"{after} in {phase_words(s.phase)}: {said}"
    if v.kind == "cannot_connect":
        return f"cannot connect: {v.detail}"
    if v.kind == "cannot_see":
        return v.detail or "cannot see the server's processes"
    if v.kind == "nothing_found":  # wait: nothing of the server for --missing-log-grace (after_s: how long)
        found = f"nothing found: {v.detail}" if v.detail else "nothing found"
        return found + (f" (for {fmt.duration(v.after_s)}, --missing-log-grace)" if v.after_s is not None else "")
    return v.detail or v.kind.replace("_", " ")


# ---------------------------------------------------------------------------------------------- deployment

_DOING = {
    Phase.QUEUED: "queued in Slurm",
    Phase.STARTING: "not started yet",
    Phase.INIT: "in NCCL init",
    Phase.LOADING_WEIGHTS: "loading weights",
    Phase.KV_CACHE: "allocating the KV cache",
    Phase.CUDA_GRAPH: "capturing CUDA graphs",
    Phase.WARMUP: "warming up",
    Phase.READY: "ready",
    Phase.SERVING: "serving",
    Phase.FAILED: "failed",
}


def member_words(dep: dm.Deployment, m: dm.Member) -> str:
    """What one member is doing, in a few words: "still loading weights 40/64", "ready", "stalled …"; a failed
    member says its own verdict line ("failed in loading weights (out of memory): …")."""
    from tui.core import deployment as dm

    s = m.state
    phase = dm.member_phase(dep, m)
    if m.role == "router":
        if phase is Phase.FAILED:
            return verdict_line(s)
        info = m.router or dm.RouterInfo()
        if not info.up:
            return "not up" + (f" ({info.detail})" if info.detail else "")
        workers = info.known_workers
        healthy = sum(1 for w in workers if w.healthy)
        return f"up, {healthy}/{len(workers)} workers healthy"
    head = dm.follows_head(dep, m)
    if head is not None and s.phase is not Phase.FAILED and s.connection not in ("reconnecting", "failed"):
        return f"{member_words(dep, head)} (in {head.name}'s log)"
    if phase is Phase.FAILED:
        return verdict_line(s)
    if s.connection in ("reconnecting", "failed"):
        return f"link {s.connection}" + (f" ({s.connection_detail})" if s.connection_detail else "")
    if phase in dm.READY_PHASES:
        return _DOING[phase]
    if dm.unconfirmed(dep, m):
        return "loaded, but its processes are not seen alive yet (a node serves no /health: only they say it runs)"
    words = _DOING[phase]
    if phase is Phase.LOADING_WEIGHTS and s.shards is not None:
        words += f" {s.shards.done}/{s.shards.total}"
    elif phase is Phase.CUDA_GRAPH and (capture := current_capture(s)[1]) is not None:
        words += f" {capture.done}/{capture.total}"
    if s.stall is not None:
        return f"stalled {words}" + (f" ({s.stall.detail})" if s.stall.detail else "")
    return f"still {words}" if phase is not Phase.STARTING else words


def _waiting(dep: dm.Deployment, m: dm.Member, behind: dm.Member) -> str:
    """A node ahead of the one behind waits for it in a collective: say where."""
    from tui.core import deployment as dm

    phase = dm.member_phase(dep, m)
    s = m.state
    if phase is Phase.LOADING_WEIGHTS and s.shards is not None and s.shards.done >= s.shards.total > 0:
        return f"{m.name} loaded {s.shards.done}/{s.shards.total}, waiting for {behind.name}"
    if phase in (Phase.STARTING, Phase.INIT):
        return f"{m.name} waiting for {behind.name} in NCCL init"
    return f"{m.name} waiting for {behind.name} ({_DOING[phase]})"


def deployment_line(dep: dm.Deployment) -> str:
    """The deployment's verdict line: ready, the member that failed and why, the stall and where, the link that
    gave up, or what holds the startup back ("node1 still loading weights; node0 loaded 64/64, waiting …")."""
    from tui.core import deployment as dm

    whole = dm.combined(dep)
    v = decide(whole)
    if v.kind == "stalled":
        return f"stalled in {phase_words(whole.phase)}: {_holding(dep)}"
    if v.kind == "cannot_connect":
        return f"cannot connect: {v.detail}"
    return _holding(dep)


def _holding(dep: dm.Deployment) -> str:
    """The one line naming what holds the deployment back (or that it is ready)."""
    from tui.core import deployment as dm

    phase = dm.deployment_phase(dep)
    multi_node = all(m.role == "node" for m in dep.members)
    if phase in dm.READY_PHASES:
        tp = dm.tp_size(dep)
        if multi_node:
            count = len(dep.members)
            return f"ready: {count} node{'s' if count != 1 else ''}" + (f", tp {tp}" if tp is not None else "")
        roles = [m.role for m in dm.leaders(dep)]  # a worker on several nodes counts once
        if roles and set(roles) <= {"prefill", "decode"}:  # workers without a router (an srtctl job): counted
            return f"ready: {roles.count('prefill')}P {roles.count('decode')}D"
        return "ready: " + ", ".join(f"{m.name} {member_words(dep, m)}" for m in dep.members)
    behind = dm.least_advanced(dep)
    if phase is Phase.FAILED:
        return f"{member_label(dep, behind)} {member_words(dep, behind)}"
    if multi_node:
        parts = [f"{behind.name} {member_words(dep, behind)}"]
        behind_key = dm.rank_key(dep, behind)
        for m in dep.members:
            if m is behind:
                continue
            if dm.unconfirmed(dep, behind):  # nobody waits for it: only its liveness is unknown
                parts.append(f"{m.name} {member_words(dep, m)}")
            elif dm.phase_order(dm.member_phase(dep, m)) > behind_key[0] or dm.bar_complete(m):
                parts.append(_waiting(dep, m, behind))
            else:
                parts.append(f"{m.name} {member_words(dep, m)}")
        return "; ".join(parts)
    # PD / servers behind a router: every member in the order listed, servers first, the router's problem last
    parts = [f"{member_label(dep, m)} {member_words(dep, m)}" for m in dep.members if m.role != "router"]
    problem = dm.router_problem(dep) or dm.bootstrap_problem(dep)
    router = next((m for m in dep.members if m.role == "router"), None)
    if problem is not None:
        parts.append(problem)
    elif router is not None:
        parts.append(f"{router.name} {member_words(dep, router)}")
    return ", ".join(parts)


def member_label(dep: dm.Deployment, m: dm.Member) -> str:
    """How a line names a member: its name, and for a node of a PD worker that spans several nodes the worker and
    which node it is ("prefill0 (node 1 of 2, on n2)"): the worker is what the recipe counts."""
    if m.worker is None:
        return m.name
    nodes = sum(1 for x in dep.members if x.worker == m.worker)
    return f"{m.worker} (node {m.node_rank} of {nodes}, on {m.host})"


def hook_words(code: int) -> str:
    """SGLANG_TUI_VERDICT for an exit code (ready, failed, stalled, timeout, connect, …)."""
    return HOOK_WORDS.get(code, str(code))
