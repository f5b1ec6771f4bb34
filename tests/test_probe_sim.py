"""`sglang-tui probe` run exactly as kubelet runs an exec probe: a fresh process each period, with a timeout,
its exit code read, liveness and readiness at the same time; against the real simulator through a whole startup.

Each test stops at the call that decides (the first ready, the first stall, the foreign 200 named); none sits out
a timeout. The periods are short (the simulator runs fast), so --timeout is raised above kubelet's 1 s for this
2-core, shared machine: the speed claim is bench/bench_probe.py's, not a test's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.processes import Cli, Sims, Spawner, child_env
from tests.helpers.sim import ROOT, SimServer, http_get, wait_for_log
from tests.helpers.sshd import free_port

PERIOD_S = 1.0
CALL_TIMEOUT_S = 60.0  # the test's own kill deadline (kubelet's timeoutSeconds): far above a call's time here
BUDGET = ("--timeout", "20")  # the call's own budget: above what a call takes on a loaded 2-core machine


@dataclass(frozen=True)
class Call:
    mode: str
    code: int
    report: dict[str, Any]

    @property
    def probe(self) -> dict[str, Any]:
        return dict(self.report["probe"])


class Kubelet:
    """Runs `probe` as kubelet does: per period, one fresh process per probe (both at once), read the exit code."""

    def __init__(self, memo_dir: Path, port: int, log: Path | None, extra: tuple[str, ...] = ()) -> None:
        self.env = child_env({"SGLANG_TUI_PROBE_DIR": str(memo_dir)})
        self.target = ["probe", "local", "--port", str(port), *(["--log", str(log)] if log else []), *BUDGET, *extra]

    def start(self, mode: str) -> subprocess.Popen[str]:
        argv = [sys.executable, "-m", "tui", *self.target, f"--{mode}", "--json"]
        return subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def period(self, *modes: str) -> list[Call]:
        """One period: every probe started at once, each waited for (killed at CALL_TIMEOUT_S, as kubelet does)."""
        procs = [(mode, self.start(mode)) for mode in modes]
        calls = []
        for mode, proc in procs:
            try:
                out, err = proc.communicate(timeout=CALL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                raise AssertionError(f"probe --{mode} ran past {CALL_TIMEOUT_S} s") from None
            assert out.strip(), f"probe --{mode} printed nothing (exit {proc.returncode}): {err}"
            calls.append(Call(mode, proc.returncode, json.loads(out)))
        return calls

    def periods(self, *modes: str, limit: int = 200) -> Iterator[list[Call]]:
        for _ in range(limit):
            started = time.monotonic()
            yield self.period(*modes)
            time.sleep(max(0.0, PERIOD_S - (time.monotonic() - started)))
        raise AssertionError(f"no deciding call in {limit} periods")


def kubelet_for(sim: SimServer, tmp_path: Path, *extra: str) -> Kubelet:
    return Kubelet(tmp_path / "memo", sim.port, sim.log, extra)


def test_alive_passes_all_through_a_slow_start_and_ready_only_once_health_says_200(
    sim: Sims, spawn: Spawner, tmp_path: Path
) -> None:
    """Weights made 4x slower (each shard a second or two apart, some 25 s in all), a 10 s stall budget: liveness
    never fails (the progress carried from call to call), readiness fails until /health answers 200."""
    server = sim(speed=20.0, shards=16, extra=("--slow", "loading_weights=4"))
    kubelet = kubelet_for(server, tmp_path, "--stall-after", "10")
    seen: list[Call] = []
    for calls in kubelet.periods("alive", "ready"):
        seen.extend(calls)
        ready = next(c for c in calls if c.mode == "ready")
        if ready.code == 0:
            break
    alive = [c for c in seen if c.mode == "alive"]
    assert [c.code for c in alive] == [0] * len(alive), [c.probe["line"] for c in alive if c.code]
    loading = [c for c in alive if c.report["phase"] == "loading_weights"]
    assert len(loading) >= 3  # the slow phase was watched across calls, each a fresh process
    assert max(c.probe["quiet_s"] for c in loading) <= 10.0
    readies = [c for c in seen if c.mode == "ready"]
    assert [c.code for c in readies[:-1]] == [7] * (len(readies) - 1)  # not ready until the deciding call
    decided = readies[-1]
    # ready, or serving once the simulator's own warmup request is decoded (a loaded machine can make the deciding
    # call late): up either way, and the probe's verdict is the phase's own word
    assert decided.code == 0 and decided.report["phase"] in ("ready", "serving")
    assert decided.probe["verdict"] == decided.report["phase"]
    # and its line is that phase's: ready's names /health's 200, serving's says it serves (m53: a late deciding call
    # found the simulator serving, and its line is "serving", which this asserted to name /health)
    said = "/health answers 200" if decided.report["phase"] == "ready" else "serving"
    assert said in decided.probe["line"], decided.probe["line"]
    assert http_get(server.port, "/health")[0] == 200
    # the probes' own requests are marked as ours in the server's access log
    assert b"GET /health?from=sglang-tui" in server.log.read_bytes()


def test_alive_fails_at_the_first_call_past_the_stall_budget_of_a_hang(
    sim: Sims, spawn: Spawner, tmp_path: Path
) -> None:
    server = sim(speed=40.0, shards=16, fault="hang-weights")
    wait_for_log(server, b"shards:", 60.0)  # probed from the weights on (a busy host may start its ranks slowly)
    kubelet = kubelet_for(server, tmp_path, "--stall-after", "4")
    seen: list[Call] = []
    for calls in kubelet.periods("alive"):
        seen.extend(calls)
        if calls[0].code != 0:
            break
    decided, before = seen[-1], seen[:-1]
    assert decided.code == 3 and decided.probe["verdict"] == "stalled"
    assert decided.report["phase"] == "loading_weights" and decided.probe["line"].startswith(
        "stalled in loading weights"
    )
    # quiet_s is said to a tenth of a second: 4.04 s of quiet, past the budget, reads 4.0 (m20)
    assert decided.probe["quiet_s"] >= decided.probe["budget_s"] == 4.0
    # every call before it was right to pass: none of them had been quiet past the budget
    assert all(c.code == 0 and c.probe["quiet_s"] <= c.probe["budget_s"] for c in before), [c.probe for c in before]
    assert server.alive()  # hung, not dead: a stall, never a failure


def test_ready_never_passes_for_a_foreign_200_on_the_port(sim: Sims, spawn: Spawner, tmp_path: Path) -> None:
    """A plain HTTP server answering 200 to everything on the port: without a log, and with the log of a run
    that has ended (its fired-up line vouches for nothing), readiness is never given."""
    port = free_port()
    foreign = spawn([sys.executable, "-c", FOREIGN_SERVER, str(port)], stdout=subprocess.PIPE, text=True)
    assert foreign.stdout is not None and foreign.stdout.readline().strip() == "listening"
    assert http_get(port, "/health")[0] == 200
    for log in (None, finished_log(sim, tmp_path)):
        kubelet = Kubelet(tmp_path / f"memo-{log is None}", port, log)
        calls = [kubelet.period("ready")[0] for _ in range(2)]  # the first call, and one resumed from its memo
        assert [c.code for c in calls] == [7, 7], [c.probe["line"] for c in calls]
        assert all("something else answers on port" in c.report["reason"] for c in calls), calls[-1].report["reason"]


def finished_log(sim: Sims, tmp_path: Path) -> Path:
    """The log of a simulator that started, got ready and was stopped."""
    server = sim(path=tmp_path / "finished", speed=200.0, shards=4)
    wait_for_log(server, b"fired up", 60.0)
    server.stop()
    return server.log


FOREIGN_SERVER = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html>hello</html>"
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
print("listening", flush=True)
server.serve_forever()
"""


def test_a_corrupt_memo_is_rebuilt_and_the_verdict_stands(sim: Sims, cli: Cli, tmp_path: Path) -> None:
    log = finished_log(sim, tmp_path)  # fired up, then stopped: the process is gone
    old = time.time() - 3600
    os.utime(log, (old, old))  # written an hour ago: past the grace in which a new launch's processes may be unfound
    env = {"SGLANG_TUI_PROBE_DIR": str(tmp_path / "memo")}
    args = ("probe", "local", "--port", str(free_port()), "--log", str(log), "--alive", "--json", *BUDGET)
    first = cli(*args, env=env)
    memo = next((tmp_path / "memo").glob("*.memo"))
    memo.write_bytes(memo.read_bytes()[:-40] + b"\0" * 40)  # torn
    again = cli(*args, env=env)
    assert (first.returncode, again.returncode) == (1, 1)  # a dead server's log: failed, both times
    one, two = json.loads(first.stdout), json.loads(again.stdout)
    assert one["phase"] == two["phase"] == "failed" and one["probe"]["line"] == two["probe"]["line"]
    assert memo.read_bytes().startswith(b"sglang-tui-probe-memo ")  # written whole again


def test_bad_arguments_exit_two_in_one_line(cli: Cli) -> None:
    for args, words in (
        (("probe", "local", "--alive", "--stall-after", "0"), "--stall-after: 0 is not above 0 seconds"),
        (("probe", "local", "gpu-2", "--alive"), "give one TARGET"),
        (("probe", "local:notaport", "--ready"), "after local: comes a port"),
        (("probe", "local"), "one of the arguments --ready --alive is required"),
    ):
        done = cli(*args)
        assert done.returncode == 2 and words in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize("mode", ["ready", "alive"])
def test_the_probe_imports_no_ui_and_no_httpx(cli: Cli, tmp_path: Path, mode: str) -> None:
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['sglang-tui', 'probe', 'local', '--port', '{free_port()}', '--{mode}']\n"
        "try:\n    runpy.run_module('tui', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'httpx', 'asyncssh', 'rich'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env=child_env({"SGLANG_TUI_PROBE_DIR": str(tmp_path)}),
    )  # fmt: skip
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr


def test_over_ssh_the_same_verdict_and_a_bad_host_key_is_four(sim: Sims, cli: Cli, sshd: Any, tmp_path: Path) -> None:
    from tests.helpers.sim import wait_ready

    server = wait_ready(sim(speed=200.0, shards=4))
    env = {"SGLANG_TUI_PROBE_DIR": str(tmp_path / "memo")}
    args = ("probe", sshd.host, *sshd.ssh_args(), "--port", str(server.port), "--log", str(server.log), *BUDGET)
    calls = [cli(*args, "--ready", "--json", env=env) for _ in range(2)]  # the second resumes from the memo
    assert [c.returncode for c in calls] == [0, 0], [c.stdout + c.stderr for c in calls]
    assert all(json.loads(c.stdout)["probe"]["verdict"] in ("ready", "serving") for c in calls)
    stranger = tmp_path / "known_hosts"
    stranger.write_text(
        f"[{sshd.host}]:{sshd.port} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
    )
    refused = cli(*args, "--known-hosts", str(stranger), "--alive", env={"SGLANG_TUI_PROBE_DIR": str(tmp_path / "m2")})
    assert refused.returncode == 4 and "cannot connect" in refused.stdout, refused.stdout + refused.stderr


def test_a_memo_directory_others_may_write_is_refused(cli: Cli, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    done = cli("probe", "local", "--port", str(free_port()), "--alive", env={"SGLANG_TUI_PROBE_DIR": str(shared)})
    assert done.returncode == 2 and "is not private" in done.stderr and "SGLANG_TUI_PROBE_DIR" in done.stderr


def test_a_state_dir_it_cannot_write_costs_the_memo_not_the_verdict(cli: Cli, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = {"SGLANG_TUI_PROBE_DIR": str(blocker / "probe")}  # under a file: no directory can be made there
    done = cli("probe", "local", "--port", str(free_port()), "--alive", "--json", *BUDGET, env=env)
    assert done.returncode == 0 and json.loads(done.stdout)["probe"]["verdict"] == "starting"
    assert "cannot keep the probe's memo" in done.stderr and "Traceback" not in done.stderr


def test_the_probes_remedy_reads_the_log_as_waits_does(cli: Cli, tmp_path: Path) -> None:
    """A failed capture's log: `probe --json`'s error.remedy is SGLang's own printed suggestion (source log),
    as `replay --json` says it: the probe reads the same clues from the same bytes (it said the table's before)."""
    log = tmp_path / "server.log"
    log.write_bytes((ROOT / "tests" / "fixtures" / "logs" / "fail-oom-capture-0.5.23.log").read_bytes())
    old = time.time() - 3600
    os.utime(log, (old, old))  # no process to find an hour later: the log's failure stands
    args = ("--port", str(free_port()), "--log", str(log), "--alive", "--json", *BUDGET)
    probed = cli("probe", "local", *args, env={"SGLANG_TUI_PROBE_DIR": str(tmp_path / "memo")})
    replayed = cli("replay", str(log), "--json")
    assert probed.returncode == 1, probed.stderr
    remedy = json.loads(probed.stdout)["error"]["remedy"]
    assert remedy is not None and remedy["source"] == "log", remedy
    assert remedy == json.loads(replayed.stdout.splitlines()[-1])["error"]["remedy"]
    assert "--cuda-graph-max-bs-decode" in [change["flag"] for change in remedy["changes"]], remedy
