"""bench/RESULTS.md as data (pure, no IO beyond the caller's): which script writes which section, the stamp each
section carries (the commit and date it was measured), and the parse/replace/render that lets `bench_all.py`
rewrite some sections and carry the others over byte for byte.

A section is the text between `<!-- results:begin NAME -->` and `<!-- results:end NAME -->`; its first line is a
`###` title and its second an italic stamp line (`_Measured … at commit abc1234 …_` when a script wrote it,
`_Recorded … at commit abc1234 …_` for a figure kept as it was first written down, e.g. the GPU checks that ran on
a lent machine the scripts cannot reach).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Bench:
    """One section a script writes: its name in RESULTS.md, the script, its arguments (full and `--quick`), and
    whether a plain `bench_all.py` runs it (False: only `--only NAME`, e.g. a minute-long terminal run)."""

    name: str
    script: str
    full: tuple[str, ...] = ()
    quick: tuple[str, ...] = ()
    in_all: bool = True
    title: str = ""  # for a script that prints plain lines rather than a `###` section


# A script's exit code when this machine lacks what it needs (Slurm, root): bench_all.py says "not run here" and goes
# on, except under CI (CI=true), whose machine installs everything, where it counts as a failure.
CANNOT_RUN_HERE = 77

BENCHES: tuple[Bench, ...] = (
    Bench("event_latency", "bench_event_latency.py", ("--appends", "200"), ("--appends", "20")),
    Bench("ready_latency", "bench_ready_latency.py", ("--trials", "3"), ("--trials", "1")),
    Bench("wait_latency", "bench_wait_latency.py", (), ("--runs", "2"), title="`wait` exit after /health turns 200"),
    Bench("host_cost", "bench_host_cost.py", ("--seconds", "15"), ("--seconds", "4")),
    Bench("laptop_cost", "bench_laptop_cost.py", ("--idle", "30", "--lines", "1000000", "--pour", "10"),
          ("--idle", "4", "--lines", "100000", "--pour", "2")),
    Bench("replay_cli", "bench_replay_cli.py", (), ("--lines", "100000")),
    Bench("replay_parser", "bench_replay.py", (), ("--lines", "100000"), title="Replay: the parser in process"),
    Bench("attach", "bench_attach.py", ("--gib", "1"), ("--gib", "0.05")),
    Bench("attach_huge", "bench_attach_huge.py", ("--gib", "2", "--against", "5fc3462"),
          ("--gib", "0.1", "--no-ssh", "--runs", "1", "--against", "5fc3462")),
    Bench("stop", "bench_stop.py", ("--trials", "3"), ("--trials", "1")),
    Bench("probe_count", "bench_probe_count.py", ("--window", "120"), ("--window", "30")),
    Bench("probe_call", "bench_probe.py", (), ("--lines", "100000", "--calls", "5")),
    Bench("probe_busy", "bench_probe_busy.py", ("--calls", "20"), ("--calls", "3", "--period", "0")),
    Bench("reliability", "reliability_table.py", (), ("--collect-only",)),
    Bench("eta_bursts", "bench_eta_bursts.py", ("--speed", "3", "--shards", "32"), ("--speed", "10", "--shards", "16"),
          in_all=False, title="The weights ETA under the multi-thread loader's bursts"),
    Bench("tui_idle_tmux", "bench_tui_idle_tmux.py", ("--seconds", "60"), ("--seconds", "10"), in_all=False),
    Bench("monitor_idle", "bench_monitor_idle.py", ("--seconds", "10"), ("--seconds", "3"), in_all=False,
          title="The Monitor idle (a quiet log, no server)"),
    Bench("ui_log", "bench_ui_log.py", in_all=False, title="Log lines per second into the TUI"),
    Bench("deployment_cost", "bench_deployment_cost.py", ("--seconds", "30"), ("--seconds", "5"), in_all=False),
    Bench("slurm", "bench_slurm.py", ("--trials", "3"), ("--trials", "1", "--runs", "5"), in_all=False),  # root, slurm-wlm
    Bench("board_idle", "bench_board_idle.py", ("--servers", "24", "--seconds", "60"), ("--servers", "3", "--seconds", "5"),
          in_all=False),  # 24 simulators and a minute per window: minutes of a shared machine's CPU
    Bench("fleet", "bench_fleet.py", ("--servers", "24", "--seconds", "30"), ("--servers", "4", "--seconds", "5", "--probes", "2"),
          in_all=False),  # 24 simulators: minutes of a shared machine's CPU
)  # fmt: skip

# Sections no script here can write (measured on a lent GPU machine): bench_all.py carries them over untouched.
RECORDED: dict[str, str] = {
    "h200_probe": "bench/gpu_probe_check.py",
    "h200x2_multi": "bench/gpu_multi_check.py",
    "h200_dump": "bench/gpu_dump_check.py",
    "h100_probe_busy": "bench/bench_probe_busy.py",  # the same script, run on a lent GPU host (issue 32)
}

PREAMBLE = """\
# Benchmark results

Every figure the project quotes, with the commit and the date it was measured. This file is written by
`bench/bench_all.py`: each section comes from one script in `bench/` (its command is under its table), and a run
rewrites only the sections it ran, carrying the others over as they are:

```sh
.venv/bin/python bench/bench_all.py                      # every section a plain run covers (about 15 minutes)
.venv/bin/python bench/bench_all.py --only event_latency # one section (NAME or part of a script's name)
.venv/bin/python bench/bench_all.py --quick --no-write   # short runs, printed only: a check that the scripts work
```

The "GPU host" of the CPU sections is the measuring machine itself, reached through a real OpenSSH sshd on
127.0.0.1, and the server is the project's simulator (8 ranks, EAGLE3) unless a section says otherwise. There is
no GPU there, so the `watch -n1 nvidia-smi` baseline uses a stand-in (one Python process per tick; a real
nvidia-smi spawn costs 25 ms to 1.5 s, so that baseline is a lower bound), and the TUI runs headless
(`run_test`) unless a section says it ran in a terminal. Sections stamped _Recorded_ ran on a lent GPU machine
(`bench/gpu_*_check.py`, see CONTRIBUTING.md) and are kept as they were written down.
"""

_BEGIN = re.compile(r"^<!-- results:begin ([a-z0-9_]+) -->$", re.M)
_END = "<!-- results:end {} -->"
# the kind, then somewhere on the line a date and `commit REV` (in either order)
STAMP = re.compile(
    r"^_(Measured|Recorded)\b(?=.*\b(\d{4}-\d{2}-\d{2})\b)(?=.*\bcommit ([0-9a-f]{7,40}(?:\+dirty)?)(?![\w+])).*_$"
)


class ResultsError(ValueError):
    """RESULTS.md is not in the shape this module writes (the message names the section or the line)."""


def parse(text: str) -> tuple[str, dict[str, str]]:
    """(the text before the first section, {name: body}) in file order; a body is what lies between its markers."""
    starts = list(_BEGIN.finditer(text))
    preamble = text[: starts[0].start()] if starts else text
    sections: dict[str, str] = {}
    pos = starts[0].start() if starts else len(text)
    for begin in starts:
        name = begin.group(1)
        if text[pos : begin.start()].strip():
            raise ResultsError(f"text outside any section before {name!r}: {text[pos : begin.start()].strip()[:60]!r}")
        end = text.find(_END.format(name), begin.end())
        if end < 0:
            raise ResultsError(f"section {name!r} has no end marker ({_END.format(name)})")
        if name in sections:
            raise ResultsError(f"section {name!r} appears twice")
        body = text[begin.end() : end].strip("\n")
        if _BEGIN.search(body):
            raise ResultsError(f"section {name!r} holds another section's begin marker")
        sections[name] = body
        pos = end + len(_END.format(name))
    if text[pos:].strip():
        raise ResultsError(f"text after the last section: {text[pos:].strip()[:60]!r}")
    return preamble, sections


def render(sections: dict[str, str]) -> str:
    """The whole file: the preamble, then each section between its markers, in the order given."""
    parts = [PREAMBLE]
    for name, body in sections.items():
        parts.append(f"<!-- results:begin {name} -->\n{body.strip(chr(10))}\n{_END.format(name)}\n")
    return "\n".join(parts)


def replace(text: str, new: dict[str, str]) -> str:
    """`text` (RESULTS.md as it is, or "") with the sections in `new` rewritten in place (new ones appended in the
    registry's order); every other section is carried over as it was."""
    _, sections = parse(text) if text.strip() else ("", {})
    merged = dict(sections)
    order = [b.name for b in BENCHES]
    for name in sorted(new, key=lambda n: order.index(n) if n in order else len(order)):
        merged[name] = new[name]
    return render(merged)


def stamped(body: str, stamp: str) -> str:
    """A script's `###` section with the stamp line put under its title."""
    title, _, rest = body.strip("\n").partition("\n")
    return f"{title}\n\n{stamp}\n\n{rest.strip(chr(10))}\n"


def stamp_of(body: str) -> re.Match[str] | None:
    """The section's stamp line (kind, date, commit), or None when it has none under its title."""
    lines = [line for line in body.splitlines() if line.strip()]
    return STAMP.match(lines[1]) if len(lines) > 1 and lines[0].startswith("### ") else None
