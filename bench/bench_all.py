"""Every figure in one run (a script, not a test): `.venv/bin/python bench/bench_all.py` writes bench/RESULTS.md.

Runs each benchmark script of `bench/results.py`'s registry in its own process, one after another, stamps each
markdown section it prints with the commit (`+dirty` when the tree has changes) and the date, and rewrites those
sections of RESULTS.md; every other section (the recorded GPU checks, the scripts not run this time) is carried
over as it was. A script that fails or runs too long is reported as such (its old section is kept); the others
still run. `--only NAME` runs only the sections whose name (or script) contains NAME; `--quick` shortens every
run (a smoke check, not figures: it prints and writes nothing unless `--out` is given).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.results import BENCHES, CANNOT_RUN_HERE, RECORDED, Bench, replace, stamped  # noqa: E402

PY = sys.executable
LIMIT_S = 420
QUICK_JOBS = 4  # a quick run's scripts side by side (one by one, CI spent ~7 min waiting on them)
RESULTS = HERE / "RESULTS.md"


def machine() -> str:
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{platform.node() or 'host'}: {os.cpu_count()} cores, {platform.python_implementation()} "
            f"{platform.python_version()}, load average {load}")  # fmt: skip


def commit() -> str:
    """`git rev-parse --short HEAD`, with `+dirty` when the tree differs from it (RESULTS.md itself aside: a
    section written a minute ago does not change what is measured)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = [line for line in git("status", "--porcelain").splitlines() if not line.endswith("bench/RESULTS.md")]
    return head + ("+dirty" if changed else "")


def command_of(bench: Bench, args: tuple[str, ...]) -> str:
    return f".venv/bin/python bench/{bench.script}{' ' + ' '.join(args) if args else ''}"


def run(bench: Bench, args: tuple[str, ...]) -> tuple[str | None, str, float]:
    """(the script's markdown section, or None when it gave none; what to print; seconds it took)."""
    started = time.monotonic()
    try:
        proc = subprocess.run([PY, str(HERE / bench.script), *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=LIMIT_S, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return (
            None,
            f"### {bench.name}\n\n- did not finish within {LIMIT_S} s: no figures\n",
            time.monotonic() - started,
        )
    took = time.monotonic() - started
    if proc.returncode == CANNOT_RUN_HERE and not os.environ.get("CI"):
        why = (proc.stderr.strip().splitlines() or ["(no reason given)"])[-1]
        return "", f"### {bench.name}\n\n- not run here: {why}\n", took  # under CI (which installs all): failed
    if proc.returncode != 0:
        # its last lines, not its last line: a warning printed at exit hid why the script failed (CI, eta_bursts)
        tail = "\n  ".join(proc.stderr.strip().splitlines()[-6:] or ["(no output)"])
        return None, f"### {bench.name}\n\n- failed (exit {proc.returncode}): {tail}\n{proc.stdout}", took
    text = proc.stdout.strip()
    if not text.startswith("#"):  # a script printing plain lines: kept as it prints them
        text = f"### {bench.title or bench.name} (as it prints)\n\n```\n{text or '(no output)'}\n```\n"
        text += f"- reproduce: `{command_of(bench, args)}`"
    return text + "\n", text + "\n", took


def run_on(bench: Bench, args: tuple[str, ...]) -> tuple[str, tuple[str | None, str, float]]:
    """The machine as the script starts (the section's stamp says it), and what `run` gives."""
    return machine(), run(bench, args)


def selected(only: list[str] | None, reliability: bool, quick: bool = False) -> list[Bench]:
    """`--only`'s sections; else a plain run's (in_all), or under `--quick` every script of the registry: a quick
    run is the check that no bench has rotted (CI runs it), so the minute-long ones run too, shortened."""
    if only:
        return [b for b in BENCHES if any(name in b.name or name in b.script for name in only)]
    return [b for b in BENCHES if (b.in_all or quick) and (reliability or b.name != "reliability")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="short runs, for checking the scripts work (writes nothing)")
    ap.add_argument("--no-reliability", action="store_true", help="skip the reliability table (runs pytest)")
    ap.add_argument("--only", metavar="NAME", action="append", help="run only sections whose name/script has NAME")
    ap.add_argument("--out", metavar="FILE", type=Path, help=f"write here instead of {RESULTS.relative_to(ROOT)}")
    ap.add_argument("--no-write", action="store_true", help="print the sections only")
    ap.add_argument("--jobs", type=int, metavar="N",
                    help=f"scripts side by side (default {QUICK_JOBS} with --quick, else 1: figures need a quiet machine)")  # fmt: skip
    args = ap.parse_args()
    benches = selected(args.only, not args.no_reliability, args.quick)
    if args.only and not benches:
        names = ", ".join(b.name for b in BENCHES)
        print(f"bench_all: no section matches {', '.join(args.only)} (sections: {names}; recorded, never run here: "
              f"{', '.join(RECORDED)})", file=sys.stderr)  # fmt: skip
        return 2
    out = args.out or RESULTS
    write = not args.no_write and (args.out is not None or not args.quick)
    missing = [tool for tool in ("ssh", "curl", "watch", "grep", "tail") if shutil.which(tool) is None]
    if missing:
        print(f"- WARNING: not installed, so the baselines that use them fail: {', '.join(missing)}")
    rev = commit()
    new: dict[str, str] = {}
    timings = []
    failed: list[str] = []
    failures: list[str] = []  # what each failed one printed, said again on stderr (stdout may go to /dev/null)
    present = [b for b in benches if (HERE / b.script).exists()]
    for bench in benches:
        if bench not in present:
            print(f"<!-- {bench.script}: not in the tree, skipped -->\n")
    jobs = max(1, args.jobs if args.jobs is not None else (QUICK_JOBS if args.quick else 1))
    # A quick run checks that every script still runs: it keeps no figure, and its scripts mostly wait on simulated
    # startups, so they run side by side. A full run's figures need the machine to themselves: one at a time.
    with ThreadPoolExecutor(jobs) as pool:
        ran = [(b, pool.submit(run_on, b, b.quick if args.quick else b.full)) for b in present]
        for bench, future in ran:
            before, (section, shown, took) = future.result()
            print(shown)
            sys.stdout.flush()
            timings.append(f"{bench.name} {took:.0f} s")
            if section is None:
                failed.append(bench.name)
                failures.append(shown)
            if section:
                when = f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC"
                kind = "a --quick run: short, not figures" if args.quick else "full run"
                stamp = f"_Measured {when} at commit {rev} ({kind}, {took:.0f} s) on {before}._"
                new[bench.name] = stamped(section, stamp)
    print(f"- run times: {', '.join(timings)}; machine after the run: {machine()}")
    if failed:  # a bench that no longer runs fails the run (CI: `--quick --no-write`), after every other one ran
        for text in failures:
            print(text, file=sys.stderr)
        print(f"bench_all: {len(failed)} failed: {', '.join(failed)}", file=sys.stderr)
    if write and new:
        old = out.read_text() if out.exists() else ""
        out.write_text(replace(old, new))
        print(f"- wrote {', '.join(new)} into {out} (commit {rev}); other sections carried over")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
