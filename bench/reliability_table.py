"""The reliability table (a script, not a test): which faults and bad inputs the test suite exercises, and whether
those tests pass. `python bench/reliability_table.py [--collect-only]`

Collects every test (`pytest --collect-only -q`), sorts them into fault categories by their file and name, runs
those tests once (`--junitxml`), and prints a markdown table: category, tests, passed, and what was lost. A
category's "lost" says "nothing" only when all of its tests pass (their assertions are byte-for-byte log
contents, no orphan processes, no GPU memory held, one clear line); otherwise it names the failing tests.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable


@dataclass(frozen=True)
class Category:
    name: str
    files: tuple[str, ...]  # test file name prefixes ("" = any file)
    words: tuple[str, ...]  # words the test name has, each at a word start (`hang` is not `changed`); empty = all
    lost_if_passing: str  # what the passing assertions guarantee was not lost


CATEGORIES = [
    Category("sshd killed mid-stream / link lost, then back", ("",),
             ("sshd_killed", "sshd_dies", "reconnect", "probe_killed", "connection_lost", "link_lost"),
             "nothing: log bytes neither lost nor repeated (byte-for-byte), probe restarted"),
    Category("network stalled (link open but silent)", ("",), ("stalled_link", "network_stall", "keepalive"),
             "nothing: link declared dead, tail resumed byte-for-byte"),
    Category("log truncated / rotated / rewritten", ("",), ("truncat", "rotat", "rewritten", "second_launch"),
             "nothing: the new file followed from its first byte, reset announced"),
    Category("server crashed, per phase (OOM load/capture, NCCL, crash, warmup, port in use, rank killed)",
             ("test_sim_faults", "test_wait", "test_readiness_phases", "test_parse_versions", "test_replay",
              "test_ui_panes"),
             ("oom", "nccl", "crash", "warmup_failure", "port_in_use", "rank_killed", "fault_exits",
              "failure_from_any_phase", "dead_process", "listener_on_the_port", "fixture_verdict[fail", "failed_shows"),
             "nothing: failed (not stalled) with the root-cause line kept"),
    Category("server hangs (no progress) → stalled",
             ("test_readiness_stall", "test_sim_faults", "test_wait", "test_ui_panes", "test_snapshots"),
             ("hang", "stall"), "nothing: called stalled (exit 3), never ready, never failed while alive"),
    Category("/health hanging, slow or refused", ("test_health", "test_readiness"),
             ("slow", "never_overlap", "times_out", "refused", "unreachable_health", "hang"),
             "nothing: one probe at a time, long timeout, no false ready"),
    Category("fuzzed / invalid log bytes", ("",),
             ("any_bytes", "random_chunks", "invalid_utf8", "binary", "fuzz", "property", "never_raise"),
             "nothing: never raises, same result however the bytes are chunked"),
    Category("huge lines", ("",), ("10mb_line", "huge", "long_line", "giant", "long_lines"),
             "nothing: a 10 MB line passes through whole"),
    Category("garbage HTTP answers", ("",), ("garbage", "junk", "models_must_look", "status_codes"),
             "nothing: classified as garbage / http_error, never ready"),
    Category("hostile paths and arguments", ("",), ("metacharacter", "quotes_every", "hostile", "injection"),
             "nothing: a path with shell metacharacters is read as a path"),
    Category("kill / stop leaves no orphan", ("test_control", "test_stop", "test_ui_watch", "test_sim_faults"),
             ("kill", "orphan", "term", "bystander", "stop"),
             "nothing: every process gone, GPU memory released, bystander untouched"),
    Category("false ready: dead server + old log, foreign 200 on the port, /health hanging, NUL-prefixed log (issue 17)",
             ("test_false_verdicts", "test_readiness_verdicts", "test_health_identity"), (),
             "nothing: never ready unless this server's /health says 200; a stop from outside named as such"),
    Category("false ready as another uid: the 8 cases of issue 17, watched by a non-root user through sshd",
             ("test_cross_uid_verdicts",), (),
             "nothing: never ready, never 'exited' for what it cannot see, what it cannot follow named; stop exit 6/5"),
    Category("SSH refused: unknown/changed host key, wrong key, closed port", ("",),
             ("host_key", "wrong_key", "auth", "unknown_host", "closed_ssh_port"),
             "nothing: one clear line, exit 4, never retried"),
    Category("watcher of another uid (cannot see the server's processes)",
             ("test_cross_uid", "test_readiness_sources", "test_control_visibility"),
             ("another_user", "another_uids", "cannot_see", "cannot_be_seen", "hidden", "really_cannot"),
             "nothing: never failed/exited while it loads, ready from log + /health, says cannot see, stop exit 5"),
    Category("log moved, deleted, unreadable or missing under the server",
             ("test_logtail_follow", "test_wait_logfile", "test_cross_uid", "test_readiness_sources",
              "test_false_verdicts"),
             ("mv_rotation", "rotation_with", "deleted", "unreadable", "missing_log", "directory", "what_the_path",
              "symlinked", "followed", "writes_its_log"),
             "nothing: the server's own file followed byte for byte to ready, and named; an unreadable log named"),
    Category("stop with nothing found, or nothing it can see", ("test_stop", "test_cross_uid"),
             ("nothing_running", "wrong_port", "stop_as_another_user"),
             "nothing: exit 6 / exit 5 with one line, never exit 0, the server left running"),
    Category("ProxyCommand fails (exits, missing binary)", ("test_ssh_proxy",), (),
             "nothing: the ProxyCommand named, exit 4"),
    Category("stop of a launch that started tmux: the tmux server, another window's job, a stop typed in a window "
             "(issue 26)", ("test_stop_tmux", "test_control"), ("spare", "stop_whose_environment", "daemon"),
             "nothing: the server's processes gone, the tmux server, the other window's job and the stop itself alive"),
    Category("terminal escapes in host-side names and typed text (issue 26)", ("test_terminal_safe",), (),
             "nothing: no raw escape on stdout, stderr or in the TUI; each shown as a visible mark"),
    Category("dump: ranks exiting during it, py-spy in the server's env (issue 26)", ("test_dump", "test_stacks"),
             ("exit_during", "ranks_that_exit", "interpreter", "py_spy_of_another_user", "py_spy_missing"),
             "nothing: the exited ranks named, exit 1; py-spy found beside the server's python, another uid's never run"),
    Category("a server on IPv6 loopback only (issue 26)", ("test_ipv6_loopback",), (),
             "nothing: ready, locally and through the SSH forward"),
    Category("bad deployment files, a member that cannot be seen (issue 26)", ("test_deployment_file",), (),
             "nothing: one line naming the key, exit 2, no host reached; an unseen member exit 5"),
    Category("broken settings file: not UTF-8, nested 100,000 deep, a FIFO, over 1 MiB (issue 26)",
             ("test_settings_broken",), (),
             "nothing: one line naming the file, exit 2 (never a traceback, never 'failed' for a ready server)"),
    Category("history locked by another process, unwritable, corrupt, odd rows (1e308 s, -100 s), not a file (issue 26)",
             ("test_history_lock", "test_history_odd"), (),
             "nothing: the verdict and the bench result come first; the history is one line; odd rows named, left out"),
    Category("hostile HTTP: dripping /metrics and /health, 2 GB bodies, a line with no newline, Infinity (issue 26)",
             ("test_bench_hostile", "test_probe_caps"), (),
             "nothing: every read capped (tui.core.limits) and timed, one line; the bench's result kept"),
    # issue 26, false verdicts 1-6 (tests/test_verdicts_round2.py end to end, tests/test_verdicts_round2_rules.py)
    Category("multi-node: node 1's processes killed while node 0 answers 200 (issue 26)", ("test_verdicts_round2",),
             ("dead_node1", "nonzero_node"),
             "nothing: never 'ready: 2 nodes'; failed, exit 1, naming node1"),
    Category("a new launch appended to a running server's log (issue 26)", ("test_verdicts_round2",),
             ("new_launch_appended", "two_launches", "rank_that_left", "earlier_launch"),
             "nothing: the latest launch's verdict; the earlier server's 200 is 'something else answers'"),
    Category("stop: port and log of two servers, or config.toml's log and an empty port (issue 26)",
             ("test_verdicts_round2",), ("stop_with", "port_and_log", "the_log_names_another", "one_server_agrees"),
             "nothing: one line naming both, exit 2, both servers left running"),
    Category("dead inside the ready hold: the whole server, or one rank (issue 26)", ("test_verdicts_round2",),
             ("ready_hold", "alive_through", "sglang_process_gone", "ready_state_is_confirmed"),
             "nothing: failed (exit 1), no ready line before it; alive through the hold is ready"),
    Category("a retry after a crash, holding the log open with no line yet (issue 26)", ("test_verdicts_round2",),
             ("retry", "quiet_writer", "writer_at_position", "failure_past", "failure_from_the_log"),
             "nothing: the retry waited for and ready, never exit 1 on the old traceback"),
    Category("a ready server behind socat, docker-proxy or ssh -L (issue 26)", ("test_verdicts_round2",),
             ("forwarder", "relay"),
             "nothing: ready 'behind socat (pid N)'; the forwarder never stopped; an unknown relay stays foreign"),
]  # fmt: skip


def members(category: Category, nodeids: list[str]) -> list[str]:
    out = []
    for nodeid in nodeids:
        path, _, name = nodeid.partition("::")
        file = Path(path).name
        name = name.lower()
        if any(file.startswith(prefix) for prefix in category.files) and (
            not category.words or any(re.search(r"(?:^|[_\[\-. ])" + re.escape(word), name) for word in category.words)
        ):
            out.append(nodeid)
    return out


def collect() -> list[str]:
    proc = subprocess.run([PY, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"], cwd=ROOT,
                          capture_output=True, text=True, check=False)  # fmt: skip
    return [line.strip() for line in proc.stdout.splitlines() if "::" in line and not line.startswith(" ")]


def run(nodeids: list[str]) -> dict[str, str]:
    """nodeid → passed | failed | error | skipped, from one pytest run's junit XML."""
    with tempfile.TemporaryDirectory(prefix="reliability-") as tmp:
        xml = Path(tmp) / "junit.xml"
        subprocess.run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout", "180", "-o",
                        "junit_family=xunit1", f"--junitxml={xml}", *nodeids], cwd=ROOT, capture_output=True,
                       text=True, check=False)  # fmt: skip
        if not xml.exists():
            return {}
        outcomes = {}
        for case in ET.parse(xml).getroot().iter("testcase"):
            file = case.get("file", "")
            module = file[:-3].replace("/", ".")
            inner = case.get("classname", "")[len(module) + 1 :]
            name = str(case.get("name")).partition("@")[0]  # xdist's loadgroup appends "@GROUP" to grouped tests
            nodeid = f"{file}::{inner + '::' if inner else ''}{name}"
            outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error", "skipped"):
                    outcome = {"failure": "failed"}.get(child.tag, child.tag)
            outcomes[nodeid] = outcome
        return outcomes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--collect-only", action="store_true", help="count the tests, do not run them")
    args = ap.parse_args()
    nodeids = collect()
    groups = [(category, members(category, nodeids)) for category in CATEGORIES]
    selected = sorted({n for _, found in groups for n in found})
    outcomes = {} if args.collect_only else run(selected)
    rows = []
    for category, found in groups:
        passed = [n for n in found if outcomes.get(n) == "passed"]
        bad = [n for n in found if outcomes.get(n) in ("failed", "error")]
        skipped = [n for n in found if outcomes.get(n) == "skipped"]
        if args.collect_only:
            lost = "not run"
        elif not found:
            lost = "UNTESTED"
        elif bad or len(passed) < len(found):
            names = ", ".join(n.split("::")[-1] for n in bad[:3]) + ("…" if len(bad) > 3 else "")
            lost = (
                f"unknown: {len(bad)} failing ({names})" if bad else f"unknown: {len(found) - len(passed)} not passed"
            )
        else:
            lost = category.lost_if_passing
        extra = f" ({len(skipped)} skipped)" if skipped else ""
        rows.append(f"| {category.name} | {len(found)} | {'—' if args.collect_only else len(passed)}{extra} | {lost} |")
    print("### Reliability: faults and bad inputs the tests exercise\n")
    print("| category | tests | passed | lost |\n|---|---|---|---|")
    print("\n".join(rows))
    print()
    total_ok = sum(1 for n in selected if outcomes.get(n) == "passed")
    print(
        f"- {len(selected)} distinct tests of {len(nodeids)} collected fall in these categories (a test may count in "
        f"two); {'not run' if args.collect_only else f'{total_ok} passed in one run'}; categories are picked by test "
        "file and name (see CATEGORIES in bench/reliability_table.py)"
    )
    print("- reproduce: `.venv/bin/python bench/reliability_table.py`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
