"""tui.core.stacks: py-spy's text parsed, ranks grouped by stack shape, odd ones named, failures classified."""

from __future__ import annotations

from pathlib import Path

from tui.core import stacks

FIXTURES = Path(__file__).parent / "fixtures" / "pyspy"


def _dump(pid: int, title: str, *frames: str) -> str:
    body = "\n".join(f"    {f}" for f in frames)
    return (
        f"Process {pid}: {title}\nPython v3.12.3 (/usr/bin/python3.12)\n\n"
        f'Thread {pid} (idle): "MainThread"\n{body}\n'
        f'Thread {pid + 1000} (idle): "watchdog"\n    wait (threading.py:355)\n\n'
    )


def _eight(odd_rank: int = 3) -> list[stacks.ProcessStack]:
    out = []
    for r in range(8):
        frames = (
            ("all_reduce (torch/distributed/distributed_c10d.py:2806)",)
            if r == odd_rank
            else ("barrier (torch/distributed/distributed_c10d.py:4159)",)
        )
        text = _dump(
            100 + r, f"sglang::scheduler_TP{r}", *frames, "event_loop_normal (sglang/srt/managers/scheduler.py:1093)"
        )
        parsed = stacks.parse_pyspy(text)[0]
        out.append(
            stacks.ProcessStack(
                parsed.pid, stacks.label(parsed.pid, parsed.cmdline, 99), parsed.cmdline, parsed.threads
            )
        )
    return out


def test_parse_keeps_threads_and_the_main_threads_frames_innermost_first() -> None:
    [p] = stacks.parse_pyspy(_dump(4242, "sglang::scheduler_TP3", "all_reduce (c10d.py:10)", "run (sched.py:5)"))
    assert p.pid == 4242 and p.cmdline == "sglang::scheduler_TP3"
    assert [t.name for t in p.threads] == ["MainThread", "watchdog"]
    assert [f.text() for f in p.frames] == ["all_reduce (c10d.py:10)", "run (sched.py:5)"]


def test_grouping_names_the_odd_rank_and_the_majority() -> None:
    g = stacks.group(_eight())
    assert g.groups == (("TP0", "TP1", "TP2", "TP4", "TP5", "TP6", "TP7"), ("TP3",))
    assert g.odd == ("TP3",)
    assert (
        g.summary
        == "TP3 is in all_reduce (distributed_c10d.py:2806); TP0–2, TP4–7 are in barrier (distributed_c10d.py:4159)"
    )
    assert stacks.to_json(_eight(), g)["odd"] == ["TP3"]


def test_a_side_step_in_one_sample_is_outvoted_and_a_hung_rank_stays_odd() -> None:
    """CI once named TP1 odd: it was caught writing a file while TP0, TP2, TP3 ran. Samples settle that."""
    calm = _eight(odd_rank=-1)  # all eight in barrier
    side = _eight(odd_rank=1)  # TP1 caught once elsewhere
    chosen, steady = stacks.settle([side, calm, calm])
    assert stacks.group(chosen, steady).odd == ()
    assert "TP1" not in steady and "TP0" in steady
    hung = _eight(odd_rank=3)
    chosen, steady = stacks.settle([hung, hung, hung])
    g = stacks.group(chosen, steady)
    assert g.odd == ("TP3",) and g.groups == (("TP0", "TP1", "TP2", "TP4", "TP5", "TP6", "TP7"), ("TP3",))
    # TP1 caught in a side step while TP3 hangs: TP1 gets its usual shape back, TP3 alone is odd
    middle = [side[1] if s.name == "TP1" else s for s in hung]
    chosen, steady = stacks.settle([hung, middle, hung])
    assert "TP1" not in steady
    g = stacks.group(chosen, steady)
    assert g.groups == (("TP0", "TP1", "TP2", "TP4", "TP5", "TP6", "TP7"), ("TP3",))
    assert g.odd == ("TP3",)


def test_no_majority_no_odd_and_all_alike() -> None:
    two = _eight()[2:4]  # TP2 barrier, TP3 all_reduce: one each
    assert stacks.group(two).odd == ()
    same = [s for s in _eight() if s.name != "TP3"]
    g = stacks.group(same)
    assert g.odd == () and g.summary.startswith("all 7 ranks are in the same place: barrier")


def test_labels() -> None:
    assert stacks.label(7, "sglang::scheduler_DP1_TP3", None) == "DP1 TP3"
    assert stacks.label(7, "sglang::scheduler", None) == "TP0"
    assert stacks.label(7, "sglang::detokenizer", None) == "detokenizer"
    assert stacks.label(7, "python3 -m sglang.launch_server --tp 8", 7) == "main"


def test_failure_classification_of_py_spys_real_output() -> None:
    """The text py-spy 0.4 printed here when the kernel refused it (captured from a real run without
    CAP_SYS_PTRACE), a missing process, and a good dump."""
    assert stacks.failure((FIXTURES / "ptrace_denied.txt").read_text()) == "ptrace"
    assert stacks.failure("Error: Operation not permitted (os error 1)") == "ptrace"
    assert stacks.failure("Error: No such process (os error 3)") == "gone"
    assert stacks.failure(_dump(1, "x", "f (a.py:1)")) is None
    line = stacks.ptrace_line("TP0 (pid 5)", "gpu1")
    assert "\n" not in line and "SYS_PTRACE" in line
    assert "pip install py-spy" in stacks.missing_line("gpu1", "/opt/venv/bin/python")


def test_ranks_that_exited_during_the_dump_are_named_first_and_in_no_group() -> None:
    """Issue 26 item 13: for TP=4 with TP1–3 gone, "all 1 ranks are in the same place" hid three dead ranks."""
    from dataclasses import replace

    four = _eight(odd_rank=-1)[:4]
    dying = [four[0], *(replace(s, threads=(), error="exited during the dump", exited=True) for s in four[1:])]
    g = stacks.group(dying)
    assert g.exited == ("TP1", "TP2", "TP3") and g.groups == (("TP0",),) and g.odd == ()
    assert g.summary == "TP1–3 exited during the dump; TP0 is in barrier (distributed_c10d.py:4159)"
    assert stacks.to_json([s for s in dying if not s.error], g)["exited"] == ["TP1", "TP2", "TP3"]
    assert stacks.group(four).exited == () and stacks.to_json(four, stacks.group(four))["exited"] == []
