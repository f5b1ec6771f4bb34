"""Freshness is a fact (DESIGN.md, third round): a `probe` whose look cannot reach the host exits 4 whatever its
memo holds, and after the host returns its verdict comes from fresh facts only. Real parts: a loopback sshd that
is killed and frozen (SIGSTOP) for real, the simulator behind it, `probe` as a fresh process per call."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from typing import Any

from tests.helpers.processes import Cli, Sims
from tests.helpers.sim import wait_ready
from tests.helpers.sshd import Sshd

BUDGET = ("--timeout", "20")  # above what a call takes on a loaded 2-core machine


def _probe(cli: Cli, sshd: Sshd, server: Any, memo: Path, mode: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    args = ("probe", sshd.host, *sshd.ssh_args(), "--port", str(server.port), "--log", str(server.log))
    done = cli(*args, *(extra or BUDGET), f"--{mode}", "--json", env={"SGLANG_TUI_PROBE_DIR": str(memo)})
    assert done.stdout.strip(), f"probe --{mode} printed nothing (exit {done.returncode}): {done.stderr}"
    return done.returncode, json.loads(done.stdout), done.stderr


def test_a_lost_host_is_four_for_every_call_and_the_verdict_after_it_comes_from_fresh_facts(
    sim: Sims, cli: Cli, fresh_sshd: Sshd, tmp_path: Path
) -> None:
    server = wait_ready(sim(speed=200.0, shards=4))
    memo = tmp_path / "memo"
    for mode in ("ready", "alive"):  # the memo holds a ready server (on a loaded machine a call's /health may
        for _ in range(20):  # answer past its budget: "not answering now", 7; the next call asks again)
            code, report, err = _probe(cli, fresh_sshd, server, memo, mode)
            if code == 0:
                break
        assert code == 0 and report["probe"]["verdict"] in ("ready", "serving"), (report["probe"], err)

    fresh_sshd.kill()  # the host's sshd and every session it forked: nothing answers on the port
    for _ in range(2):  # every call, not only the first: the memo's ready never answers for a failed look
        for mode in ("ready", "alive"):
            code, report, err = _probe(cli, fresh_sshd, server, memo, mode)
            assert code == 4, (mode, report["probe"], err)
            assert report["probe"]["verdict"] == "cannot_connect"
            line = report["probe"]["line"]
            assert line.startswith("cannot connect:") and re.search(r"last seen (ready|serving) \S+ ago", line), line

    listener = fresh_sshd.start().proc
    assert listener is not None
    os.kill(listener.pid, signal.SIGSTOP)
    try:  # frozen: the TCP handshake completes, the SSH banner never comes; the call's own --timeout ends it
        code, report, err = _probe(cli, fresh_sshd, server, memo, "ready", "--timeout", "3")
        assert code == 4 and report["probe"]["verdict"] == "cannot_connect", (report["probe"], err)
    finally:
        os.kill(listener.pid, signal.SIGCONT)

    for _ in range(20):  # the host is back, the server still up: ready again from this call's own look
        code, report, err = _probe(cli, fresh_sshd, server, memo, "ready")
        if code != 7:
            break
    assert code == 0 and report["probe"]["verdict"] in ("ready", "serving"), (report["probe"], err)

    fresh_sshd.kill()
    server.stop()  # the server dies while its host cannot be reached …
    code, report, _ = _probe(cli, fresh_sshd, server, memo, "ready")
    assert code == 4
    fresh_sshd.start()  # … and the host comes back: the memo's ready is not the answer, the look is
    code, report, err = _probe(cli, fresh_sshd, server, memo, "ready")
    assert code == 1 and report["probe"]["verdict"] == "failed", (report["probe"], err)
    assert report["phase"] == "failed"
