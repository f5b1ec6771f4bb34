"""The pure half of Slurm jobs as targets: the target grammar, `scontrol show job -o` / `show hostnames` /
`show node -o` answers (as slurm-wlm 22.05 printed them on the test cluster), and Slurm's filename patterns as
slurmstepd expands them (src/slurmd/slurmstepd/fname.c; the sbatch man page's examples). That Slurm itself
names the files so is checked on the real cluster: tests/test_slurm.py."""

from __future__ import annotations

import pytest

from tui.core import slurmjob as sj

SHOW_JOB = (
    "JobId=1 JobName=my job UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 Nice=0 "
    "Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 "
    "Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-01T22:59:35 "
    "EligibleTime=2026-12-01T22:59:35 AccrueTime=2026-12-01T22:59:35 StartTime=2026-12-01T22:59:38 EndTime=Unknown "
    "Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-01T22:59:38 Scheduler=Main "
    "Partition=sgltui AllocNode:Sid=localhost:27751 ReqNodeList=(null) ExcNodeList=(null) NodeList=sgtn[1-2] "
    "BatchHost=sgtn1 NumNodes=2 NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=2,mem=4000M,node=2,billing=2 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 "
    "MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 "
    "Licenses=(null) Network=(null) Command=/tmp/jobs/launch.sh --tp 16 MODEL=llama WorkDir=/tmp/my jobs "
    "StdErr=/tmp/my jobs/my job_1_%N_%n_%t_%s_%J_root_%4j_%%N.out StdIn=/dev/null "
    "StdOut=/tmp/my jobs/my job_1_%N_%n_%t_%s_%J_root_%4j_%%N.out Power= TresPerNode=gres:gpu:8 "
)


def test_show_job_keeps_free_text_whole() -> None:
    job = sj.parse_show_job(SHOW_JOB + "\n", "1")
    assert job is not None
    assert (job.job_id, job.name, job.user, job.uid, job.state) == ("1", "my job", "root", 0, "RUNNING")
    assert (job.node_list, job.batch_host, job.num_nodes, job.batch) == ("sgtn[1-2]", "sgtn1", 2, True)
    assert job.command == "/tmp/jobs/launch.sh --tp 16 MODEL=llama"  # `MODEL=` is part of the command line
    assert job.work_dir == "/tmp/my jobs"
    assert job.std_out == "/tmp/my jobs/my job_1_%N_%n_%t_%s_%J_root_%4j_%%N.out"
    assert job.reason == "" and job.tres_per_node == "gres:gpu:8"
    assert sj.parse_show_job(SHOW_JOB, "2") is None and sj.parse_show_job("", None) is None


def test_a_key_this_slurm_does_not_know_yet_still_ends_a_free_text_value() -> None:
    fields = sj.show_job_fields("JobId=3 StdOut=/x/out.log NewerKey=abc JobState=RUNNING")
    assert fields["StdOut"] == "/x/out.log" and fields["NewerKey"] == "abc" and fields["JobState"] == "RUNNING"


def test_hostnames_and_node_hostnames() -> None:
    assert sj.parse_hostnames("sgtn1\nsgtn2\n\n") == ("sgtn1", "sgtn2")
    nodes = (
        "NodeName=sgtn1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=1 NodeAddr=127.0.0.1 NodeHostName=vm Port=31043\n"
        "NodeName=sgtn2 Arch=x86_64 NodeAddr=127.0.0.1 NodeHostName=vm Port=31044\n"
    )
    assert sj.parse_node_hostnames(nodes) == {"sgtn1": "vm", "sgtn2": "vm"}
    assert sj.parse_running_jobs("12\n7\n12\nnot-a-job\n") == ("12", "7")


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("slurm:", sj.SlurmTarget(None)),
        ("slurm:4242", sj.SlurmTarget("4242")),
        ("login1/slurm:4242", sj.SlurmTarget("4242", "login1")),
        ("me@login.hpc.example/slurm:7:logs/%x_%j_node%n.out", sj.SlurmTarget("7", "me@login.hpc.example", "logs/%x_%j_node%n.out")),
    ],
)  # fmt: skip
def test_target_grammar(text: str, target: sj.SlurmTarget) -> None:
    assert sj.is_slurm_target(text)
    assert sj.parse_target(text) == target
    assert str(target) == text


@pytest.mark.parametrize("text", ["slurm:abc", "slurm::x.log", "a/b/slurm:3"])
def test_a_bad_target_is_one_line_saying_what_to_write(text: str) -> None:
    with pytest.raises(sj.SlurmTargetError) as err:
        sj.parse_target(text)
    assert "\n" not in str(err.value) and "slurm:" in str(err.value)


@pytest.mark.parametrize("text", ["gpu1", "user@gpu1", "gpu1:/var/log/sglang.log", "local", "slurmhost:/x"])
def test_hosts_are_not_slurm_targets(text: str) -> None:
    assert not sj.is_slurm_target(text)


# The sbatch man page's examples (a 4-task step 0 of job 128) and slurmstepd's rules.
STEP = sj.PatternFields(job_id="128", job_name="train", user="alice", step_id="0", hostname="gpu3", work_dir="/w")


@pytest.mark.parametrize(
    ("pattern", "fields", "name"),
    [
        ("job%J.out", STEP, "/w/job128.0.out"),
        ("job%4j.out", STEP, "/w/job0128.out"),
        ("job%2j-%2t.out", STEP, "/w/job128-00.out"),
        ("%x_%j_node%n.out", sj.PatternFields("9", "sgl", node_index=1, task_id=1, step_id="0", work_dir="/w"),
         "/w/sgl_9_node1.out"),
        ("/abs/%u/%N-%s.log", STEP, "/abs/alice/gpu3-0.log"),
        ("%12j", STEP, "/w/0000000128"),  # a width above 10 pads to 10
        ("%%j %q %3N", STEP, "/w/%j %q gpu3"),  # %% is %, an unknown letter stays, a width never pads a name
        ("a\\%j", STEP, "/w/a%j"),  # a backslash: no replacement at all
        ("%A_%a", sj.PatternFields("130", array_job_id="128", array_task_id="2"), "128_2"),
        ("%s %J %n %t %N", sj.PatternFields("5", hostname="vm"), "batch 5 0 0 vm"),  # the batch script's
    ],
)  # fmt: skip
def test_patterns_expand_as_slurm_does(pattern: str, fields: sj.PatternFields, name: str) -> None:
    assert sj.expand_pattern(pattern, fields) == name


def test_the_batch_log_and_the_per_node_logs_of_a_job() -> None:
    job = sj.parse_show_job(SHOW_JOB)
    assert job is not None
    # scontrol already expanded %x, %j and %u; %4j and %%N it left as written (22.05), as slurmstepd reads them
    assert sj.batch_log(job, "vm") == "/tmp/my jobs/my job_1_vm_0_0_batch_1_root_0001_%N.out"
    assert sj.node_log("%x_%j_node%n.out", job, 1, "vm") == "/tmp/my jobs/my job_1_node1.out"
    assert sj.per_node("%x_%j_node%n.out") and sj.per_node("%N.log") and sj.per_node("t%3t")
    assert not sj.per_node("%x_%j_master.out") and not sj.per_node("%%n")


def test_what_says_sglang() -> None:
    assert sj.mentions_sglang("srun python3 -m sglang.launch_server --tp 16")
    assert sj.mentions_sglang("sglang serve --model-path x") and sj.mentions_sglang("sglang::scheduler_TP0")
    assert sj.mentions_sglang("python -m sglang_router.launch_router")
    assert not sj.mentions_sglang("srun python train.py --lang en") and not sj.mentions_sglang("")


@pytest.mark.parametrize(
    ("tres", "gpus"),
    [("gres:gpu:8", 8), ("gres/gpu:h100:4", 4), ("gres/gpu=2", 2), ("cpu=2,mem=4000M", None), ("", None)],
)
def test_gpus_per_node(tres: str, gpus: int | None) -> None:
    assert sj.gpus_per_node(tres) == gpus


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["wait", "slurm:1", "gpu2"], "a slurm: target is a whole job"),
        (["stop", "slurm:1", "--deployment", "d.toml"], "a slurm: target is a whole job"),
        (["bench", "slurm:3"], "bench does not reach Slurm jobs yet"),
        (["dump", "somehost", "--member", "decode0"], "--member names a member of a Slurm job"),
        (["wait", "slurm:4", "--launch", "python -m sglang.launch_server"], "started by its batch script"),
        (["stop", "slurm:4", "--grace", "-1"], "--grace: not 0 or more seconds: '-1'"),
    ],
)
def test_the_command_line_refuses_what_a_slurm_target_cannot_take(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli import main

    with pytest.raises(SystemExit) as done:  # a bad command line ends in argparse's exit
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1
