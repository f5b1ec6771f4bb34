"""The TUI idle at ready in a real terminal (a script, not a test): CPU per minute of `sglang-tui local` in tmux,
watching the simulator once it is ready and quiet, against `tail -F` of the same log in the same terminal.

    python bench/bench_tui_idle_tmux.py [--seconds 60] [--size 200x50] [--against REV]

The TUI's figure is its own process, read from /proc (utime + stime) over the window, after a settling period.
Its whole process tree is shown beside it: with `local` the host-side commands it starts (tail, GPU probe, process
watch) run here as its children; over SSH they run on the GPU host (bench_host_cost.py measures them there). The
simulator is started outside the pane, so none of its CPU is counted. `--against REV` measures the TUI
of that git revision too (`git archive` of its `tui/` into a temporary directory), beside this tree's, against the
same simulator and in the same window, so a before and an after share the machine's noise (each also sees the
other's /health probes in the log: the same for both). `tail -F` runs in that window too.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from bench_common import CLK_TCK, PY, ROOT, md_table, process_cpu_s, section, sim_ready, tree_cpu_s, tree_pids

SETTLE_S = 15.0  # the first seconds after ready: /model_info, the last log lines, history writes


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def _new_session(session: str, cwd: Path, size: tuple[int, int], command: str) -> None:
    """A detached session; tried again when it meets the server that the last session's end is shutting down."""
    argv = ["tmux", "new-session", "-d", "-s", session, "-c", str(cwd), "-x", str(size[0]), "-y", str(size[1]), command]
    for _ in range(5):
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode == 0:
            return
        time.sleep(1.0)
    raise SystemExit(f"{session}: tmux new-session failed: {done.stderr.strip()}")


def _pane_pid(session: str) -> int:
    return int(_tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())


class Pane(NamedTuple):
    session: str
    command: str
    ready_text: str | None  # measured once this shows in the pane (None: at once)
    cwd: Path = ROOT  # `python -m` imports from here first


def _measure(panes: Sequence[Pane], size: tuple[int, int], seconds: float) -> list[tuple[float, float]]:
    """CPU seconds per minute of each pane's process tree, and of its first process alone, over one window of
    `seconds` shared by all of them (so they share the machine's noise), once each has shown its ready text."""
    try:
        for pane in panes:
            _new_session(pane.session, pane.cwd, size, pane.command)
        deadline = time.monotonic() + 120
        for pane in panes:
            while pane.ready_text is not None and pane.ready_text not in _tmux(
                "capture-pane", "-p", "-t", pane.session
            ):
                if time.monotonic() > deadline:
                    shown = _tmux("capture-pane", "-p", "-t", pane.session)
                    raise SystemExit(f"{pane.session}: {pane.ready_text!r} never showed:\n{shown}")
                time.sleep(0.5)
        time.sleep(SETTLE_S)
        roots = [_pane_pid(pane.session) for pane in panes]
        before = [(tree_cpu_s(root), process_cpu_s(root)) for root in roots]
        time.sleep(seconds)
        after = [(tree_cpu_s(root), process_cpu_s(root)) for root in roots]
        for pane, root in zip(panes, roots, strict=True):
            if not tree_pids(root):
                raise SystemExit(f"{pane.session}: the process left during the window")
        per_minute = 60.0 / seconds
        return [((a[0] - b[0]) * per_minute, (a[1] - b[1]) * per_minute) for b, a in zip(before, after, strict=True)]
    finally:
        for pane in panes:
            subprocess.run(["tmux", "kill-session", "-t", pane.session], capture_output=True)


def _tree_at(rev: str, into: Path) -> Path:
    """The `tui` package of git revision `rev`, unpacked under `into` (a PYTHONPATH root)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "tui"], check=True, capture_output=True)
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _row(name: str, own: float, tree: float | None) -> tuple[str, str, str, str]:
    """The watcher's own process (the figure), and with what it runs on the host (its process tree)."""
    return name, f"{own:.2f} s", f"{own / 60 * 100:.1f} %", "—" if tree is None else f"{tree:.2f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measuring window (default 60)")
    parser.add_argument("--size", default="200x50", help="terminal size, COLSxROWS (default 200x50)")
    parser.add_argument("--against", metavar="REV", help="also measure the TUI of this git revision (a baseline)")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("bench_tui_idle_tmux: needs tmux (apt-get install tmux)", file=sys.stderr)
        return 2
    cols, rows = (int(x) for x in args.size.lower().split("x"))
    rows_out = []
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        trees = (
            [(f"sglang-tui local at {args.against}", _tree_at(args.against, Path(tmp) / "base"))]
            if args.against
            else []
        )
        trees.append(("sglang-tui local (this tree)" if args.against else "sglang-tui local", ROOT))
        sim = sim_ready(Path(tmp), tp=8, shards=64)
        try:
            panes = []
            for n, (_, root) in enumerate(trees):
                state = Path(tmp) / f"state{n}"
                tui = (
                    f"env XDG_STATE_HOME={state} XDG_CONFIG_HOME={state} PYTHONPATH={root} {PY} -m tui local "
                    f"--log {sim.log} --port {sim.port} --sim-gpus {sim.gpu_state}"
                )
                panes.append(Pane(f"bench-idle-tui{n}", tui, "READY", root))
            panes.append(Pane("bench-idle-tail", f"tail -F {sim.log}", None))
            *tuis, (tail_cpu, _) = _measure(panes, (cols, rows), args.seconds)
        finally:
            sim.stop()
    for (name, _), (tui_cpu, app_cpu) in zip(trees, tuis, strict=True):
        rows_out.append(_row(f"{name} (the TUI at ready, quiet server)", app_cpu, tui_cpu))
    rows_out.append(_row("tail -F LOG in the same terminal", tail_cpu, None))
    against = f" --against {args.against}" if args.against else ""
    print(
        section(
            f"The idle TUI at ready in tmux ({cols}x{rows})",
            md_table(("watcher", "CPU per minute", "of one core", "with its host-side commands"), rows_out),
            [
                f"window {args.seconds:g} s after {SETTLE_S:g} s of settling; process tree from /proc (CLK_TCK {CLK_TCK})",
                "CPU per minute: the TUI's own process; with its host-side commands: its whole process tree, what it "
                "runs on the host as well (`local`: here; over SSH, on the GPU host: bench_host_cost.py): tail, "
                "GPU probe, process watch",
                "all the rows were measured side by side, in one window",
            ],
            command=f"python bench/bench_tui_idle_tmux.py --seconds {args.seconds:g} --size {args.size}{against}",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
