"""Hold a history file's write lock from a process of its own, as another sglang-tui (or the `sqlite3` shell)
stuck inside a transaction would: `python -m tests.helpers.sqlite_lock PATH [--rollback]`. It prints `locked`
once the lock is held and keeps it until it is killed. --rollback first turns the file from WAL to a rollback
journal, where the lock keeps readers out too."""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("--rollback", action="store_true")
    args = parser.parse_args()
    db = sqlite3.connect(args.path, isolation_level=None)
    if args.rollback:
        db.execute("PRAGMA journal_mode = DELETE")
    db.execute("BEGIN EXCLUSIVE")
    db.execute("UPDATE launches SET recorded_at = recorded_at")  # a write: the lock is a writer's
    print("locked", flush=True)
    while True:
        time.sleep(60)


def hold(spawn: Callable[..., subprocess.Popen[str]], path: Path, *, rollback: bool = False) -> subprocess.Popen[str]:
    """Start the holder through the `spawn` fixture (killed at teardown, or by the caller) and return once it
    holds the lock."""
    root = Path(__file__).resolve().parent.parent.parent
    argv = [sys.executable, "-m", "tests.helpers.sqlite_lock", str(path), *(["--rollback"] if rollback else [])]
    proc = spawn(argv, cwd=root, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "locked\n"
    return proc


if __name__ == "__main__":
    main()
