"""The TUI idle at ready in a real terminal (a script, not a test): CPU per minute of `sglang-tui local` in tmux,
watching the simulator once it is ready and quiet, against `tail -F` of the same log in the same terminal.

    python bench/bench_tui_idle_tmux.py [--seconds 60] [--size 200x50] [--against REV]

The TUI's figure is its whole process tree (the app and the host-side loops it starts: tail, GPU probe, process
watch), read from /proc (utime + stime) over the window, after a settling period; the app's own process is shown
apart. The simulator is started outside the pane, so none of its CPU is counted. `--against REV` measures the TUI
of that git revision too (`git archive` of its `tui/` into a temporary directory), in the same run against the
same simulator, so a before and an after share the machine's noise.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import CLK_TCK, PY, ROOT, md_table, process_cpu_s, section, sim_ready, tree_cpu_s, tree_pids

SETTLE_S = 15.0  # the first seconds after ready: /model_info, the last log lines, history writes


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def _pane_pid(session: str) -> int:
    return int(_tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())


def _measure(
    session: str, command: str, size: tuple[int, int], seconds: float, ready_text: str | None, cwd: Path = ROOT
) -> tuple[float, float]:
    """CPU seconds per minute of the pane's process tree, and of its first process alone, over `seconds`, once
    `ready_text` shows (if given). It runs in `cwd` (`python -m` imports from there first)."""
    _tmux("new-session", "-d", "-s", session, "-c", str(cwd), "-x", str(size[0]), "-y", str(size[1]), command)
    try:
        deadline = time.monotonic() + 120
        while ready_text is not None and ready_text not in _tmux("capture-pane", "-p", "-t", session):
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"{session}: {ready_text!r} never showed:\n" + _tmux("capture-pane", "-p", "-t", session)
                )
            time.sleep(0.5)
        time.sleep(SETTLE_S)
        root = _pane_pid(session)
        before, before_own = tree_cpu_s(root), process_cpu_s(root)
        time.sleep(seconds)
        after, after_own = tree_cpu_s(root), process_cpu_s(root)
        if not tree_pids(root):
            raise SystemExit(f"{session}: the process left during the window")
        return (after - before) * 60.0 / seconds, (after_own - before_own) * 60.0 / seconds
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def _tree_at(rev: str, into: Path) -> Path:
    """The `tui` package of git revision `rev`, unpacked under `into` (a PYTHONPATH root)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "tui"], check=True, capture_output=True)
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _row(name: str, cpu: float, own: float | None) -> tuple[str, str, str, str]:
    return name, f"{cpu:.2f} s", f"{cpu / 60 * 100:.1f} %", "—" if own is None else f"{own:.2f} s"


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
            for n, (name, root) in enumerate(trees):
                state = Path(tmp) / f"state{n}"
                tui = (
                    f"env XDG_STATE_HOME={state} XDG_CONFIG_HOME={state} PYTHONPATH={root} {PY} -m tui local "
                    f"--log {sim.log} --port {sim.port} --sim-gpus {sim.gpu_state}"
                )
                tui_cpu, app_cpu = _measure(f"bench-idle-tui{n}", tui, (cols, rows), args.seconds, "READY", root)
                rows_out.append(_row(f"{name} (the TUI at ready, quiet server)", tui_cpu, app_cpu))
            tail_cpu, _ = _measure("bench-idle-tail", f"tail -F {sim.log}", (cols, rows), args.seconds, None)
        finally:
            sim.stop()
    rows_out.append(_row("tail -F LOG in the same terminal", tail_cpu, None))
    against = f" --against {args.against}" if args.against else ""
    print(
        section(
            f"The idle TUI at ready in tmux ({cols}x{rows})",
            md_table(("watcher", "CPU per minute", "of one core", "of it, the app's own process"), rows_out),
            [
                f"window {args.seconds:g} s after {SETTLE_S:g} s of settling; process tree from /proc (CLK_TCK {CLK_TCK})",
                "the rest of the tree is what the TUI runs on the host (`local`: here): tail, GPU probe, process watch",
            ],
            command=f"python bench/bench_tui_idle_tmux.py --seconds {args.seconds:g} --size {args.size}{against}",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
