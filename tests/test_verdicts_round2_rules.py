"""The pure rules behind issue 26's false verdicts 1-6 (their end-to-end tests: tests/test_verdicts_round2.py):
what a search's output says (the log's launches, a forwarder, a writer that has not written, port and log of
two servers), and what the reducer, the deployment model and the liveness rules make of the process watch's
reports."""

from __future__ import annotations

from tui.core import deployment as dm
from tui.core.events import Failure, HealthResult, LogActivity, PortOwner, ServerProcess
from tui.core.forwarders import forwarder
from tui.core.liveness import failure_settling, ready_confirmed
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.core.wording import deployment_line, verdict_line
from tui.sources.control_cmds import disagreement, latest_launch, launches, parse_find, pick_main

WATCHED = Readiness.of(health_probed=True, health_port=30000, log_watched=True, process_watched=True)
_HEALTH_OK = HealthResult("/health", "ok", 200)


# ---------------------------------------------------------------------------------- the log's launches (2)

# An earlier server (100, its rank 101) and a launch appended to its log (200, its rank 201), both writing it;
# the earlier one still holds the port.
TWO_LAUNCHES = """port 100
log 100 5000
log 101 5000
log 200 6000
log 201 6000
S 100 S 1 100 100 1000
S 101 S 100 100 100 1010
S 200 S 1 200 200 9000
S 201 S 200 200 200 9010
C 100 python -m sglang.launch_server --port 30000
C 101 sglang::scheduler_TP0
C 200 python -m sglang.launch_server --port 30000
C 201 sglang::scheduler_TP0
"""


def test_two_launches_in_one_log_are_told_apart_and_the_latest_is_the_server() -> None:
    found = parse_find(TWO_LAUNCHES)
    assert [(root.pid, sorted(pids)) for root, pids in launches(found)] == [(100, [100, 101]), (200, [200, 201])]
    assert latest_launch(found) == {200, 201}
    main = pick_main(found)
    assert main is not None and main.pid == 200  # not the earlier server, though it holds the port


def test_a_rank_that_left_its_tree_is_no_launch_of_its_own() -> None:
    """A scheduler re-parented to PID 1 (its main gone) shares its launch's session: one launch, not two."""
    text = "log 100 5\nlog 101 5\nS 100 S 1 100 100 1000\nS 101 S 1 100 100 1010\nC 100 python -m sglang\n"
    found = parse_find(text + "C 101 sglang::scheduler_TP1\n")
    assert [root.pid for root, _ in launches(found)] == [100] and latest_launch(found) is None


def test_an_earlier_launch_on_the_port_is_something_else() -> None:
    owner = PortOwner(30000, 100, "python -m sglang.launch_server", ours=False, earlier=True)
    s = reduce(reduce(WATCHED.evolve(phase=Phase.LOADING_WEIGHTS, launched=True), owner, 1.0), _HEALTH_OK, 1.1)
    assert s.phase is Phase.LOADING_WEIGHTS
    assert verdict_line(s).endswith(
        "; something else answers on port 30000: PID 100 (python -m sglang.launch_server) listens there: an earlier "
        "launch in the same log, not its latest"
    ), verdict_line(s)


# --------------------------------------------------------------------------------------- forwarders (6)


def test_known_forwarders_by_their_command_line() -> None:
    assert forwarder("/usr/bin/docker-proxy -proto tcp -host-ip 0.0.0.0 -host-port 30000") == "docker-proxy"
    assert forwarder("socat TCP-LISTEN:30000,fork TCP:10.0.0.2:30000") == "socat"
    assert forwarder("ssh -N -L 30000:gpu:30000 jump") == "ssh"
    assert forwarder("sshd: alice@notty") == "sshd"
    assert forwarder("python3 -m http.server 30000") == "" and forwarder("") == ""


def test_a_forwarder_on_the_port_is_never_the_server() -> None:
    text = "port 40\nS 40 S 1 40 40 100\nC 40 /usr/bin/docker-proxy -proto tcp -host-port 30000\n"
    assert pick_main(parse_find(text)) is None  # `stop --port` then finds nothing to kill


def test_behind_a_forwarder_the_identity_probe_decides_and_the_verdict_says_so() -> None:
    owner = PortOwner(30000, 812, "socat TCP-LISTEN:30000,fork TCP:127.0.0.1:31000", None, forwarder="socat")
    up = WATCHED.evolve(log_ready=True, launched=True, process_alive=True)
    s = reduce(reduce(up, owner, 1.0), _HEALTH_OK, 1.1)
    assert s.phase is not Phase.READY and "relays the port; asking what answers behind it" in verdict_line(s), (
        verdict_line(s)
    )
    named = HealthResult("/model_info", "ok", 200, model_path="org/m", detail="org/m")
    s = reduce(reduce(reduce(up, owner, 1.0), named, 1.1), _HEALTH_OK, 1.2)
    assert s.phase is Phase.READY and verdict_line(s).endswith("; behind socat (pid 812)"), verdict_line(s)
    other = HealthResult("/model_info", "http_error", 404, detail="HTTP 404")
    s = reduce(reduce(reduce(up, owner, 1.0), other, 1.1), _HEALTH_OK, 1.2)
    assert s.phase is not Phase.READY and "something else answers" in verdict_line(s)  # it relays something else


# ----------------------------------------------------------------------- port and log disagree (3)

BOTH = """port 300
log 100 50
S 100 S 1 100 100 1000
S 300 S 1 300 300 2000
C 100 python -m sglang.launch_server --port 31000
C 300 python -m sglang.launch_server --port 32000
N 100 31000
N 300 32000
"""


def test_port_and_log_of_two_servers_disagree() -> None:
    line = disagreement(parse_find(BOTH), 32000, "/a.log")
    assert line is not None and line.startswith("port 32000 is served by PID 300 (python -m sglang")
    assert "but /a.log is written by PID 100 (" in line and line.endswith(": two servers")


def test_the_log_names_another_port_than_the_empty_one_typed() -> None:
    text = "log 100 50\nS 100 S 1 100 100 1000\nC 100 python -m sglang.launch_server --port 31000\nN 100 31000\n"
    line = disagreement(parse_find(text), 32000, "/a.log")
    assert line == (
        "nothing serves port 32000, but /a.log is written by PID 100 (python -m sglang.launch_server --port 31000), "
        "started with --port 31000"
    )
    assert disagreement(parse_find(text), 31000, "/a.log") is None  # loading, not listening yet: one server


def test_one_server_agrees_however_it_is_found() -> None:
    one = "port 100\nlog 100 5\nlog 101 5\nS 100 S 1 100 100 1000\nS 101 S 100 100 100 1010\n"
    assert disagreement(parse_find(one), 30000, "/a.log") is None
    assert disagreement(parse_find("M 0\n"), 30000, "/a.log") is None  # nothing at all: `stop` says nothing found
    relay = "port 40\nlog 100 5\nS 40 S 1 40 40 10\nS 100 S 1 100 100 1000\nC 40 socat TCP-LISTEN:30000,fork x\n"
    assert disagreement(parse_find(relay), 30000, "/a.log") is None  # a forwarder in front of the log's server


# ------------------------------------------------------------------- a writer that has not written (5)


def test_a_writer_at_position_0_or_started_after_the_logs_last_change_has_written_nothing() -> None:
    base = "log 100 0\nlog 200 4886\nlog 300 4886\nZ 4886\nY 1000.50\nT 2000.00 1900.00 100\n"
    procs = "S 100 S 1 100 100 5000\nS 200 S 1 200 200 9060\nS 300 S 1 300 300 9040\n"  # starts: 150.6, 190.4 s
    found = parse_find(base + procs)
    assert found.log_size == 4886 and found.log_mtime == 1000.5 and found.boot_at == 100.0
    started = found.started_at(200)
    assert started is not None and abs(started - 190.6) < 1e-6  # boot (2000 - 1900) + 9060 ticks
    assert found.quiet_writers == (100,)  # 100: nothing written through its file; 200, 300 started before
    later = parse_find(base.replace("Y 1000.50", "Y 150.00") + procs)
    assert later.quiet_writers == (100, 200, 300)  # all started after the log's last change
    assert parse_find("log 5 -1\nS 5 S 1 5 5 10\n").quiet_writers == ()  # a position it could not read: unknown


def _failed_then(quiet: tuple[int, ...], size: int) -> Readiness:
    s = WATCHED.evolve(launched=True)
    s = reduce(s, Failure("oom", "torch.OutOfMemoryError: CUDA out of memory.", at="2026-01-01 10:00:00"), 1.0)
    s = reduce(s, LogActivity(4000, b"x"), 1.0)  # the failure's bytes end by offset 4000
    assert s.phase is Phase.FAILED and s.failed_log_offset == 4000
    return reduce(s, ServerProcess(alive=True, pids=(7,), quiet_writers=quiet, quiet_log_size=size), 2.0)


def test_a_quiet_writer_after_a_crash_is_a_retry_coming() -> None:
    s = _failed_then((7,), 4886)
    assert s.phase is Phase.STARTING and s.error is None and s.process_alive is True
    assert s.last_progress.startswith("a new launch holds the log open (pid 7)")


def test_a_failure_past_what_the_writer_found_had_written_stands() -> None:
    """The log was 3000 bytes when the writer was quiet; the failure ends at 4000: it may be its own."""
    assert _failed_then((7,), 3000).phase is Phase.FAILED
    assert _failed_then((), 4886).phase is Phase.FAILED  # no quiet writer: the failure stands


def test_a_failure_from_the_log_waits_for_the_process_watchs_first_report() -> None:
    s = reduce(WATCHED.evolve(launched=True), Failure("oom", "CUDA out of memory", at="x"), 10.0)
    assert failure_settling(s, 10.5) and not failure_settling(s, 16.0)  # at most 5 s
    seen = reduce(s, ServerProcess(alive=False), 11.0)
    assert not failure_settling(seen, 11.0)


# -------------------------------------------------------------- ranks, liveness and the ready hold (4)

_RANKS = ((11, "sglang::scheduler_TP0"), (12, "sglang::scheduler_TP1"))


def test_an_sglang_process_gone_while_the_rest_lives_is_failed() -> None:
    s = reduce(WATCHED.evolve(launched=True), ServerProcess(alive=True, pids=(10, 11, 12), titled=_RANKS), 1.0)
    s = reduce(s, ServerProcess(alive=True, pids=(10, 11), titled=_RANKS[:1]), 3.0)
    assert s.phase is Phase.FAILED and s.error is not None
    assert s.error.line == (
        "sglang::scheduler_TP1 (pid 12) exited while the rest of the server runs: it cannot serve without it"
    )
    assert failure_settling(s, 3.5) and not failure_settling(s, 4.0)  # a moment for the log's own cause


def test_a_ready_state_is_confirmed_only_by_liveness_after_its_last_fact() -> None:
    s = reduce(WATCHED.evolve(phase=Phase.READY), ServerProcess(alive=True, pids=(10,)), 5.0)
    assert ready_confirmed(s)
    assert not ready_confirmed(reduce(s, LogActivity(10, b"later"), 6.0))  # a fact after the last look
    assert not ready_confirmed(reduce(s, ServerProcess(alive=False), 7.0))


def test_a_nonzero_node_is_ready_only_once_its_processes_are_seen_alive() -> None:
    head = WATCHED.evolve(phase=Phase.READY, log_ready=True)  # node 0's log said fired up
    node1 = Readiness.of(process_watched=True, phase=Phase.CUDA_GRAPH)
    dep = dm.nodes([("node0", "h0"), ("node1", "h1")]).with_state("node0", head).with_state("node1", node1)
    assert dm.deployment_phase(dep) is Phase.WARMUP
    assert deployment_line(dep) == (
        "node1 loaded, but its processes are not seen alive yet (a node serves no /health: only they say it runs); "
        "node0 ready"
    )
    alive = dep.with_state("node1", node1.evolve(process_alive=True))
    assert dm.deployment_phase(alive) is Phase.READY and deployment_line(alive) == "ready: 2 nodes"
    unseen = dep.with_state("node1", node1.evolve(process_visible=False))  # another uid: the log decides
    assert dm.deployment_phase(unseen) is Phase.READY
    unread = dep.with_state("node0", WATCHED.evolve(phase=Phase.READY))  # /health 200, its log not read yet
    assert dm.member_phase(unread, unread.member("node0")) is Phase.WARMUP  # ready waits for its ranks and TP


def test_a_200_from_an_earlier_launch_that_is_gone_says_nothing_of_what_listens_now() -> None:
    """The earlier server gave the /health 200 (foreign: it holds the port); once it is gone, that 200 is no
    answer of the latest launch's: ready waits for a 200 received after (it said ready on the stale one)."""
    earlier = PortOwner(30000, pid=100, ours=False, earlier=True)
    s = reduce(reduce(WATCHED, earlier, 1.0), _HEALTH_OK, 2.0)
    assert s.health_ready
    s = reduce(s, PortOwner(30000, pid=None), 3.0)  # it died: nobody listens now
    assert not s.health_ready and s.health_ok_since is None
    s = reduce(s, _HEALTH_OK, 4.0)  # the latest launch's own answer
    assert s.health_ready and s.health_ok_since == 4.0
