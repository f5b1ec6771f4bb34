"""Every figure in one run (a script, not a test): `cd /work/main && .venv/bin/python bench/bench_all.py`.

Runs each benchmark script in its own process, one after another, and prints their markdown sections (ready for
the README) with the machine they ran on and the command that reproduces them. A script that fails or runs too
long is reported as such; the others still run. `--quick` shortens every run (for a smoke check, not figures).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
LIMIT_S = 420

# (script, full arguments, quick arguments)
BENCHES: list[tuple[str, list[str], list[str]]] = [
    ("bench_event_latency.py", ["--appends", "200"], ["--appends", "20"]),
    ("bench_ready_latency.py", ["--trials", "3"], ["--trials", "1"]),
    ("bench_wait_latency.py", [], ["--runs", "2"]),  # when present (prints plain lines)
    ("bench_host_cost.py", ["--seconds", "15"], ["--seconds", "4"]),
    ("bench_laptop_cost.py", ["--idle", "30", "--lines", "1000000", "--pour", "10"],
     ["--idle", "4", "--lines", "100000", "--pour", "2"]),
    ("bench_replay_cli.py", [], ["--lines", "100000"]),
    ("bench_attach.py", ["--gib", "1"], ["--gib", "0.05"]),
    ("bench_stop.py", ["--trials", "3"], ["--trials", "1"]),
    ("bench_probe_count.py", ["--window", "120"], ["--window", "30"]),
]  # fmt: skip


def machine() -> str:
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{platform.node() or 'host'}: {os.cpu_count()} cores, {platform.python_implementation()} "
            f"{platform.python_version()}, load average {load}")  # fmt: skip


def run(script: str, args: list[str]) -> tuple[str, float]:
    """The script's stdout (its markdown), or a line saying why there is none."""
    started = time.monotonic()
    try:
        proc = subprocess.run([PY, str(HERE / script), *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=LIMIT_S, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"### {script}\n\n- did not finish within {LIMIT_S} s: no figures\n", time.monotonic() - started
    took = time.monotonic() - started
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return f"### {script}\n\n- failed (exit {proc.returncode}): {tail}\n{proc.stdout}", took
    if not proc.stdout.lstrip().startswith("#"):  # another engineer's script printing plain lines
        doc = proc.stdout.strip() or "(no output)"
        command = f".venv/bin/python bench/{script}{' ' + ' '.join(args) if args else ''}"
        return f"### {script} (as it prints)\n\n```\n{doc}\n```\n- reproduce: `{command}`\n", took
    return proc.stdout, took


def h1_replay(quick: bool) -> tuple[str, float]:
    """The parser benchmark, as it prints it (in-process parser vs a bare loop, peak memory)."""
    started = time.monotonic()
    args = ["--lines", "100000"] if quick else []
    proc = subprocess.run([PY, str(HERE / "bench_replay.py"), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=LIMIT_S, check=False)  # fmt: skip
    body = proc.stdout.strip() or proc.stderr.strip()
    text = ("### Replay: the parser in-process (bench/bench_replay.py)\n\n```\n" + body + "\n```\n"
            f"- reproduce: `.venv/bin/python bench/bench_replay.py{' ' + ' '.join(args) if args else ''}`\n")  # fmt: skip
    return text, time.monotonic() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="short runs, for checking the scripts work")
    ap.add_argument("--no-reliability", action="store_true", help="skip the reliability table (runs pytest)")
    ap.add_argument("--only", metavar="NAME", action="append", help="run only scripts whose name contains NAME")
    args = ap.parse_args()
    print(f"## sglang-tui figures ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC)\n")
    print(
        f"- machine: {machine()}; everything on 127.0.0.1 (the 'GPU host' is this machine through a real "
        "OpenSSH sshd on loopback; the server is the project's simulator)"
    )
    missing = [tool for tool in ("ssh", "curl", "watch", "grep", "tail") if shutil.which(tool) is None]
    if missing:
        print(f"- WARNING: not installed, so the baselines that use them fail: {', '.join(missing)}")
    print(f"- reproduce all: `cd {ROOT} && .venv/bin/python bench/bench_all.py{' --quick' if args.quick else ''}`\n")
    timings = []
    jobs: list[tuple[str, object]] = []
    for script, full, quick in BENCHES:
        if args.only and not any(name in script for name in args.only):
            continue
        if not (HERE / script).exists():
            print(f"<!-- {script}: not in the tree, skipped -->\n")
            continue
        jobs.append((script, lambda s=script, a=(quick if args.quick else full): run(s, a)))
        if script == "bench_replay_cli.py":
            jobs.append(("bench_replay.py", lambda: h1_replay(args.quick)))
    if not args.no_reliability and not args.only:
        jobs.append(("reliability_table.py", lambda: run("reliability_table.py", [])))
    for script, job in jobs:
        text, took = job()  # type: ignore[operator]
        print(text)
        sys.stdout.flush()
        timings.append(f"{script} {took:.0f} s")
    print(f"- run times: {', '.join(timings)}; machine after the run: {machine()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
