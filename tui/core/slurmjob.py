"""Slurm jobs as targets, the pure parts: `slurm:JOBID` / `LOGIN/slurm:JOBID[:LOG]`, `scontrol show job -o`,
`scontrol show hostnames` and `scontrol show node -o` as values, and Slurm's filename patterns expanded as Slurm
expands them (slurmstepd's fname.c: the batch script's output and a step's output differ in %s, %J and %N).

Pure: the commands that produce this text run in tui/sources/slurm.py.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from datetime import datetime

from tui.core.events import SlurmJobState
from tui.core.jobtargets import SLURM_PREFIX
from tui.core.jobtargets import is_slurm_target as is_slurm_target  # re-exported: still importable from here
from tui.core.lazyre import lazy

PREFIX = SLURM_PREFIX

# Keys whose values are free text (a path or a command line may hold spaces, even `WORD=…`): a token after
# one of them that is no key scontrol prints belongs to its value.
_FREE_TEXT = frozenset({"JobName", "Command", "WorkDir", "StdOut", "StdErr", "StdIn", "Comment", "AdminComment",
                        "SystemComment", "Reason"})  # fmt: skip
_KNOWN = frozenset(
    [
        "JobId",
        "ArrayJobId",
        "ArrayTaskId",
        "ArrayTaskThrottle",
        "JobName",
        "UserId",
        "GroupId",
        "MCS_label",
        "Priority",
        "Nice",
        "Account",
        "QOS",
        "JobState",
        "Reason",
        "Dependency",
        "Requeue",
        "Restarts",
        "BatchFlag",
        "Reboot",
        "ExitCode",
        "DerivedExitCode",
        "RunTime",
        "TimeLimit",
        "TimeMin",
        "SubmitTime",
        "EligibleTime",
        "AccrueTime",
        "StartTime",
        "EndTime",
        "Deadline",
        "SuspendTime",
        "SecsPreSuspend",
        "LastSchedEval",
        "Scheduler",
        "Partition",
        "AllocNode:Sid",
        "ReqNodeList",
        "ExcNodeList",
        "NodeList",
        "BatchHost",
        "NumNodes",
        "NumCPUs",
        "NumTasks",
        "CPUs/Task",
        "ReqB:S:C:T",
        "TRES",
        "Socks/Node",
        "NtasksPerN:B:S:C",
        "CoreSpec",
        "MinCPUsNode",
        "MinMemoryNode",
        "MinMemoryCPU",
        "MinTmpDiskNode",
        "Features",
        "DelayBoot",
        "OverSubscribe",
        "Contiguous",
        "Licenses",
        "Network",
        "Command",
        "WorkDir",
        "StdErr",
        "StdIn",
        "StdOut",
        "Power",
        "Comment",
        "AdminComment",
        "SystemComment",
        "TresPerNode",
        "TresPerJob",
        "TresPerTask",
        "MailUser",
        "MailType",
        "CpusPerTres",
        "MemPerTres",
        "TresBind",
        "TresFreq",
        "Container",
        "ContainerID",
        "Prolog",
        "Epilog",
        "NtasksPerTRES",
        "ResvPorts",
        "SubmitLine",
        "Cluster",
        "LastBusyTime",
        "Extra",
        "HetJobId",
        "HetJobOffset",
        "HetJobIdSet",
        "Reservation",
        "BurstBuffer",
        "BurstBufferState",
        "StepMgrEnabled",
    ]
)
_KEY = lazy(r" (?=[A-Z][A-Za-z0-9_:/]*=)")
_CAMEL = lazy(r"^[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+$")  # a key this list does not know yet (a newer Slurm's)
_TARGET = lazy(r"^(?:(?P<login>[^/\s]+)/)?slurm:(?P<job>[0-9]*)(?::(?P<log>.+))?$")
_PATTERN = lazy(r"%(%|(\d+)?([A-Za-z]))")


class SlurmTargetError(ValueError):
    """A `slurm:` target that does not parse: str() is one line saying what to write instead."""


@dataclass(frozen=True)
class SlurmTarget:
    """`slurm:` (every running SGLang job of the user), `slurm:JOBID`, `LOGIN/slurm:JOBID`, and an optional
    `:LOG` (a filename pattern, expanded per node: e.g. `%x_%j_node%n.out`, relative to the job's WorkDir)."""

    job_id: str | None  # None: every running job of the user that runs SGLang
    login: str | None = None  # the login node (an SSH destination); None: Slurm's commands on this machine
    log: str | None = None

    def __str__(self) -> str:
        where = f"{self.login}/" if self.login else ""
        return f"{where}{PREFIX}{self.job_id or ''}" + (f":{self.log}" if self.log else "")


def parse_target(text: str) -> SlurmTarget:
    """`[LOGIN/]slurm:[JOBID][:LOG]` as a SlurmTarget; SlurmTargetError with one line otherwise."""
    found = _TARGET.match(text.strip())
    if found is None:
        raise SlurmTargetError(
            f"{text!r} is no Slurm target: write slurm:JOBID (e.g. slurm:4242), slurm: (every running SGLang job "
            "of yours), or LOGIN/slurm:JOBID to reach Slurm through a login node over SSH"
        )
    job = found.group("job") or None
    log = found.group("log")
    if log is not None and job is None:
        raise SlurmTargetError(f"{text!r}: a log pattern needs a job id (slurm:JOBID:PATTERN)")
    return SlurmTarget(job, found.group("login"), log)


@dataclass(frozen=True)
class SlurmJob:
    """One job as `scontrol show job -o` shows it (the fields this tool reads)."""

    job_id: str
    name: str = ""
    user: str = ""
    uid: int | None = None
    state: str = ""  # RUNNING, PENDING, COMPLETING, …
    reason: str = ""
    node_list: str = ""  # compressed: n[1-2]
    batch_host: str = ""
    num_nodes: int = 0
    std_out: str = ""  # with %j, %x, %u (and %A, %a) expanded by scontrol; %N, %n, %t… as written
    std_err: str = ""
    work_dir: str = ""
    command: str = ""
    array_job_id: str = ""
    array_task_id: str = ""
    batch: bool = True  # BatchFlag=1: an sbatch job (else an salloc/srun allocation)
    tres_per_node: str = ""  # e.g. gres:gpu:8 (the GPUs a probe step asks for)

    @property
    def running(self) -> bool:
        return self.state == "RUNNING"


def show_job_fields(line: str) -> dict[str, str]:
    """One line of `scontrol show job -o` as key -> value (values may hold spaces and `=`)."""
    fields: dict[str, str] = {}
    last = ""
    for token in _KEY.split(" " + line.strip()):
        if not token:
            continue
        key, eq, value = token.partition("=")
        if eq and (key in _KNOWN or last not in _FREE_TEXT or _CAMEL.match(key)):
            fields[key] = value
            last = key
        elif last:  # `WORD=…` inside a command line or a path: part of the value before it
            fields[last] = f"{fields[last]} {token}"
    return {k: v.strip() for k, v in fields.items()}


def _user(value: str) -> tuple[str, int | None]:
    """`root(0)` -> ("root", 0)."""
    found = re.match(r"^(.*)\((\d+)\)$", value)
    return (found.group(1), int(found.group(2))) if found else (value, None)


def parse_show_job(text: str, job_id: str | None = None) -> SlurmJob | None:
    """The job (the first line, or the line of `job_id`) of `scontrol show job -o` output; None when absent."""
    for line in text.splitlines():
        if not line.startswith("JobId="):
            continue
        f = show_job_fields(line)
        if job_id is not None and f.get("JobId") != job_id and f.get("ArrayJobId") != job_id:
            continue
        user, uid = _user(f.get("UserId", ""))
        nodes = f.get("NumNodes", "0").split("-", 1)[0]
        return SlurmJob(
            job_id=f.get("JobId", ""),
            name=f.get("JobName", ""),
            user=user,
            uid=uid,
            state=f.get("JobState", ""),
            reason=_null(f.get("Reason", "")),
            node_list=_null(f.get("NodeList", "")),
            batch_host=_null(f.get("BatchHost", "")),
            num_nodes=int(nodes) if nodes.isdigit() else 0,
            std_out=f.get("StdOut", ""),
            std_err=f.get("StdErr", ""),
            work_dir=f.get("WorkDir", ""),
            command=_null(f.get("Command", "")),
            array_job_id=f.get("ArrayJobId", ""),
            array_task_id=f.get("ArrayTaskId", ""),
            batch=f.get("BatchFlag", "1") != "0",
            tres_per_node=_null(f.get("TresPerNode", "")),
        )
    return None


def _null(value: str) -> str:
    return "" if value in ("(null)", "None") else value


def parse_hostnames(text: str) -> tuple[str, ...]:
    """`scontrol show hostnames LIST`: one name a line, in the job's order (node 0 first)."""
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def parse_node_hostnames(text: str) -> dict[str, str]:
    """`scontrol show node -o LIST`: NodeName -> NodeHostName (what %N expands to on that node)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        f = dict(token.partition("=")[::2] for token in line.split() if "=" in token)
        if f.get("NodeName"):
            out[f["NodeName"]] = f.get("NodeHostName") or f["NodeName"]
    return out


def parse_running_jobs(text: str) -> tuple[str, ...]:
    """`squeue -h -o %A …`: the job ids, in order, once each."""
    seen: dict[str, None] = {}
    for line in text.splitlines():
        word = line.strip().split("|", 1)[0]
        if word.isdigit():
            seen.setdefault(word)
    return tuple(seen)


def gpus_per_node(tres_per_node: str) -> int | None:
    """`gres:gpu:8`, `gres/gpu:h100:8`, `gres/gpu=8` -> 8 (None when the job asked for no GPUs): what a probe
    step asks for, so that it sees the job's GPUs where Slurm constrains devices."""
    found = re.search(r"gres[:/]gpu(?::[A-Za-z0-9_.-]+)?[:=](\d+)", tres_per_node)
    return int(found.group(1)) if found else None


_SGLANG = lazy(r"\bsglang\b|sglang[._:-]|sglang_router")


def mentions_sglang(text: str) -> bool:
    """Whether a command line or batch script runs SGLang (`python -m sglang.launch_server`, `sglang serve`,
    `sglang_router`, an `sglang::` title)."""
    return _SGLANG.search(text) is not None


# ------------------------------------------------------------------------------------------ filename patterns


@dataclass(frozen=True)
class PatternFields:
    """What Slurm substitutes into a filename pattern for one output file (one node, or the batch script)."""

    job_id: str
    job_name: str = ""
    user: str = ""
    node_index: int = 0  # %n: the node's index in the job (0 first)
    hostname: str = ""  # %N: the node's short hostname (NodeHostName), as slurmstepd's conf->hostname
    task_id: int = 0  # %t: the task's rank in the step
    step_id: str | None = None  # %s, and %J's `.STEP`; None: the batch script (%s is `batch`, %J the job id)
    array_job_id: str = ""
    array_task_id: str = ""
    work_dir: str = ""


def _number(value: str | int, width: int) -> str:
    text = str(value)
    return text.zfill(width) if text.isdigit() else text


def expand_pattern(pattern: str, fields: PatternFields) -> str:
    """A filename pattern as Slurm expands it: %% %A %a %j %J %n %N %s %t %u %x, a zero-padding width (`%4j`,
    at most 10, ignored for names), unknown letters kept as written, a pattern holding `\\` taken literally
    (backslashes dropped), and a relative path under the job's WorkDir."""
    if "\\" in pattern:
        name = pattern.replace("\\", "")
    else:
        name = _PATTERN.sub(lambda m: _one(m, fields), pattern)
    if not name.startswith("/") and fields.work_dir:
        name = fields.work_dir.rstrip("/") + "/" + name
    return name


def _one(m: re.Match[str], f: PatternFields) -> str:
    if m.group(1) == "%":
        return "%"
    width = min(int(m.group(2)), 10) if m.group(2) else 0
    letter = m.group(3)
    array = f.array_task_id not in ("", "N/A")
    values: dict[str, str | int] = {
        "A": f.array_job_id if array and f.array_job_id else f.job_id,
        "a": f.array_task_id if array else "4294967294",  # NO_VAL, as Slurm prints it outside an array
        "j": f.job_id,
        "J": f.job_id if f.step_id is None else f"{f.job_id}.{f.step_id}",
        "n": f.node_index,
        "N": f.hostname,
        "s": "batch" if f.step_id is None else f.step_id,
        "t": f.task_id,
        "u": f.user,
        "x": f.job_name,
    }
    if letter not in values:
        return m.group(0)
    if letter in ("N", "u", "x"):
        return str(values[letter])
    if letter == "J":
        head, _, step = str(values["J"]).partition(".")
        return _number(head, width) + (f".{step}" if step else "")
    return _number(values[letter], width)


def per_node(pattern: str) -> bool:
    """Whether a pattern names one file per node (%N, %n or %t, outside `%%`)."""
    return any(m.group(3) in ("N", "n", "t") for m in _PATTERN.finditer(pattern) if m.group(1) != "%")


def batch_log(job: SlurmJob, hostname: str = "") -> str:
    """The batch script's output file (StdOut), as slurmstepd names it on the batch host (node 0)."""
    return expand_pattern(job.std_out, _fields(job, 0, hostname or job.batch_host, None))


def node_log(pattern: str, job: SlurmJob, index: int, hostname: str, step_id: str = "0") -> str:
    """A step's output file on node INDEX (one task per node: %t is the node's index), for `--log PATTERN`."""
    return expand_pattern(pattern, _fields(job, index, hostname, step_id))


def _fields(job: SlurmJob, index: int, hostname: str, step_id: str | None) -> PatternFields:
    return PatternFields(
        job_id=job.job_id, job_name=job.name, user=job.user, node_index=index, hostname=hostname, task_id=index,
        step_id=step_id, array_job_id=job.array_job_id, array_task_id=job.array_task_id, work_dir=job.work_dir,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------ the queue, each cycle

# One squeue line per job: id, long state, reason, submit time, (expected) start time, nodes, comment (last: free
# text). `-t all` keeps the jobs that ended while Slurm still remembers them (MinJobAge), with their final word.
QUEUE_FORMAT = "%i|%T|%r|%V|%S|%N|%k"
QUEUE_NOW = "SGLANG_TUI_NOW"  # the line the look ends with: the Slurm host's clock (Slurm's times are its local time)
STOP_MARK = "sglang-tui stop"  # the job's Comment while `stop` cancels it: a watcher says "stopped", not "failed"


def queue_command(job_ids: tuple[str, ...] | list[str]) -> str:
    """One look at the queue for every job followed (one squeue call), then the host's clock."""
    quote = shlex.quote
    ids = quote(",".join(job_ids))
    return f'squeue -h -t all -j {ids} -o {quote(QUEUE_FORMAT)} 2>&1; echo "{QUEUE_NOW} $? $(date +%Y-%m-%dT%H:%M:%S)"'


def _slurm_time(text: str) -> float | None:
    """`2026-12-06T11:37:18` as seconds (naive: only differences on one host's clock are used); None for N/A."""
    try:
        return datetime.strptime(text.strip(), "%Y-%m-%dT%H:%M:%S").timestamp()
    except ValueError:
        return None


class QueueLookError(ValueError):
    """squeue failed for another reason than jobs it no longer knows: str() is its own words."""


def parse_queue(text: str, job_ids: tuple[str, ...] | list[str]) -> dict[str, SlurmJobState]:
    """queue_command's output as job id -> SlurmJobState for each job asked for; a job squeue no longer lists
    (or calls an invalid id) is GONE. QueueLookError when squeue itself failed (slurmctld down, …)."""
    lines = text.splitlines()
    marker = next((line for line in reversed(lines) if line.startswith(QUEUE_NOW + " ")), None)
    if marker is None:
        raise QueueLookError("squeue gave no answer")
    _, code, clock = (marker.split(" ", 2) + ["", ""])[:3]
    now = _slurm_time(clock)
    found: dict[str, SlurmJobState] = {}
    errors = []
    for line in lines:
        if line is marker or line.startswith(QUEUE_NOW + " "):
            continue
        fields = line.split("|", 6)
        if len(fields) != 7 or not fields[0].strip():
            if line.strip():
                errors.append(line.strip())
            continue
        job, state, reason, submit, start, nodes, comment = (f.strip() for f in fields)
        submitted, starts = _slurm_time(submit), _slurm_time(start)
        pending = state in ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING")
        found[job] = SlurmJobState(
            job_id=job, state=state, reason=_null(reason),
            queued_s=(now - submitted) if pending and now is not None and submitted is not None else None,
            starts_in_s=(starts - now) if pending and now is not None and starts is not None else None,
            nodes=_null(nodes), ours=comment == STOP_MARK,
        )  # fmt: skip
    if code != "0" and not all("Invalid job id" in e for e in errors):
        raise QueueLookError("; ".join(errors)[:300] or f"squeue exit status {code}")
    return {j: found.get(j) or SlurmJobState(job_id=j, state="GONE") for j in job_ids}
