"""Issue 17 in the reducer: ready only when this server is ready (its /health 200), dead is never ready, a stop
from outside is named, NUL runs in a log are nothing. Events fed to `reduce`, as the sources would send them."""

from __future__ import annotations

from tests.test_readiness_phases import at, feed, startup
from tui.core.events import (
    BatchStats,
    ControlResult,
    Failure,
    HealthResult,
    Milestone,
    PortOwner,
    ServerArgs,
    ServerProcess,
    Tick,
)
from tui.core.explain import evidence
from tui.core.logparse import LogParser
from tui.core.readiness import FIND_GRACE_S, reduce
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line

OK = HealthResult("/health", "ok", status=200)
REFUSED = HealthResult("/health", "refused", detail="connection refused")
HUNG = HealthResult("/health", "timeout", detail="ReadTimeout")
SGLANG_M = HealthResult("/model_info", "ok", status=200, detail="m", model_path="m")
GARBAGE = HealthResult("/model_info", "garbage", status=200, detail="no model_path in b'<html>'")
PROBED = Readiness.of(health_probed=True, health_port=30000)  # as `wait` and the TUI start


def test_fired_up_with_health_refused_is_not_ready_and_says_why() -> None:
    s = feed(startup(), PROBED)
    assert s.phase is Phase.WARMUP and s.log_ready  # probed: the log alone is not enough
    s = reduce(s, REFUSED, 36025.0)
    assert s.phase is Phase.WARMUP
    assert verdict_line(s).startswith("up but not answering /health for 5.0s (last: /health refused on port 30000)")
    s = reduce(s, ServerProcess(alive=False), 36040.0)
    assert s.phase is Phase.FAILED and "server process exited" in verdict_line(s)  # dead is never ready


def test_hanging_health_after_fired_up_waits_for_an_answer() -> None:
    s = feed(startup(), PROBED)
    s = reduce(s, ServerProcess(alive=True, pids=(7,)), 36021.0)
    s = reduce(s, HUNG, 36051.0)
    assert s.phase is Phase.WARMUP and "1-token generation" in verdict_line(s) and " 31s " in verdict_line(s)
    s = reduce(s, OK, 36075.0)  # answered at last: this launch's log vouches for it
    assert s.phase is Phase.READY and verdict_line(s) == "ready: the log says fired up and /health answers 200"


def test_a_200_with_no_launch_in_the_log_needs_the_identity_probe() -> None:
    s = reduce(PROBED, OK, 1.0)
    assert s.phase is Phase.STARTING and "checking what answers" in verdict_line(s)
    s = reduce(reduce(s, GARBAGE, 2.0), OK, 2.1)
    assert s.phase is Phase.STARTING
    assert verdict_line(s).startswith("something else answers on port 30000: its /model_info answer is not SGLang's")
    s = reduce(reduce(PROBED, HealthResult("/model_info", "http_error", status=404, detail="HTTP 404"), 1.0), OK, 1.1)
    assert s.phase is Phase.STARTING and "HTTP 404: not an SGLang server" in verdict_line(s)
    s = reduce(reduce(PROBED, SGLANG_M, 1.0), OK, 1.1)
    assert s.phase is Phase.READY and "/model_info names m" in verdict_line(s)


def test_another_model_on_the_port_is_not_ready_even_after_fired_up() -> None:
    other = HealthResult("/model_info", "ok", status=200, detail="x/other", model_path="x/other")
    s = feed(startup(), PROBED)
    s = reduce(reduce(s, other, 36021.0), OK, 36021.1)
    assert s.phase is Phase.WARMUP and s.health_ready
    assert verdict_line(s) == "something else answers on port 30000: it serves x/other; the log launches m"
    assert any(e.startswith("health: /health 200 from something else") for e in evidence(s))


def test_the_same_model_with_only_server_args_in_the_log_is_ready() -> None:
    s = feed([ServerArgs(model="m/", tp_size=1, **at(0))], PROBED)
    s = reduce(reduce(s, SGLANG_M, 36001.0), OK, 36001.1)
    assert s.phase is Phase.READY


def test_a_200_while_the_log_loads_stays_foreign_whatever_the_identity() -> None:
    s = feed(startup("load_begin"), PROBED)
    s = reduce(reduce(s, SGLANG_M, 36005.0), OK, 36005.1)
    assert s.phase is Phase.LOADING_WEIGHTS and verdict_line(s).startswith("loading weights")
    assert any("another server on this port" in e for e in evidence(s))


def test_a_listener_outside_the_servers_processes_is_never_ready() -> None:
    owner = PortOwner(port=30000, pid=4242, command="python3 -m http.server 30000", ours=False)
    s = feed(startup(), PROBED)
    s = reduce(s, owner, 36020.5)
    s = reduce(reduce(s, SGLANG_M, 36021.0), OK, 36021.1)
    assert s.phase is Phase.WARMUP and s.port_owner == owner
    assert verdict_line(s) == ("something else answers on port 30000: PID 4242 (python3 -m http.server 30000) listens "
                        "there, not one of the server's processes")  # fmt: skip
    assert any("PID 4242" in e and "not one of the server's processes" in e for e in evidence(s))
    s = reduce(s, PortOwner(port=30000, pid=4243, command="sglang", ours=True), 36022.0)
    assert s.phase is Phase.READY  # the listener is now the server's own: its 200 counts


def test_the_servers_own_listener_vouches_before_the_log_shows_the_launch() -> None:
    s = reduce(PROBED, PortOwner(port=30000, pid=9, ours=True), 1.0)
    s = reduce(s, OK, 1.1)
    assert s.phase is Phase.READY and "has not said fired up" in verdict_line(s)
    unknown = reduce(reduce(PROBED, PortOwner(port=30000, pid=None, ours=None), 1.0), OK, 1.1)
    assert unknown.phase is Phase.STARTING  # cannot tell: the identity probe still has to vouch


def test_decode_lines_are_not_serving_until_this_servers_health_says_200() -> None:
    decode = BatchStats("decode", running_req=2, gen_throughput=80.0, **at(30))
    s = feed(startup() + [decode], PROBED)
    assert s.phase is Phase.WARMUP and s.decode is not None  # an old log's serving tail is not a live server
    s = reduce(s, OK, 36031.0)
    assert s.phase is Phase.READY
    s = feed([BatchStats("decode", running_req=1, **at(32))], s)
    assert s.phase is Phase.SERVING
    replayed = feed(startup() + [decode])  # replay: no probe at all, the log decides
    assert replayed.phase is Phase.SERVING


def test_no_health_by_choice_is_ready_from_the_log_with_a_live_process() -> None:
    s = feed(startup(), Readiness.of(health_probed=False))
    assert s.phase is Phase.WARMUP  # the process watch has not seen it alive yet
    s = reduce(s, ServerProcess(alive=True, pids=(5,)), 36021.0)
    assert s.phase is Phase.READY
    assert verdict_line(s) == "ready: the log says fired up (log only: /health is not probed, --no-health)"
    dead = reduce(
        feed(startup("uvicorn_running"), Readiness.of(health_probed=False)), ServerProcess(alive=False), 36100.0
    )
    dead = feed([Milestone("fired_up", **at(101))], dead)
    assert dead.phase is Phase.FAILED  # dead is never ready
    replayed = feed(startup())
    assert (
        replayed.phase is Phase.READY
        and verdict_line(replayed) == "ready: the log says fired up (log only: no health probe)"
    )


def test_an_unseen_process_is_never_dead() -> None:
    s = feed(startup("load_begin"), PROBED)
    later = 36000.0 + FIND_GRACE_S + 60
    s = reduce(s, ServerProcess(alive=None, detail="cannot see"), later)
    assert s.phase is Phase.LOADING_WEIGHTS and s.process_alive is None


def test_a_sigterm_from_outside_is_stopped_not_failed_other() -> None:
    sigterm = Milestone("shutdown", line="[2025-11-29 10:05:00] SIGTERM received. signum=None frame=None. Draining "
                        "requests and shutting down...", **at(300))  # fmt: skip
    s = feed(startup(), PROBED)
    s = reduce(s, OK, 36021.0)
    s = feed([sigterm, Milestone("shutdown", line="INFO:     Shutting down", **at(302))], s)
    assert s.phase is Phase.READY and s.shutdown == sigterm
    assert any(e.startswith("log: shutting down:") for e in evidence(s))
    s = reduce(s, ServerProcess(alive=False), 36305.0)
    assert s.phase is Phase.FAILED and s.error is not None and s.error.stopped_by == "outside"
    assert verdict_line(s).startswith(
        "stopped (by a signal from outside sglang-tui): [2025-11-29 10:05:00] SIGTERM received"
    )
    assert verdict_line(s).endswith("; no process of the server is left")
    # our own terminate makes SGLang log the same line: then it is ours, in either order
    ours = feed([sigterm], reduce(feed(startup(), PROBED), OK, 36021.0))
    ours = reduce(reduce(ours, ServerProcess(alive=False), 36305.0), ControlResult("terminate", ok=True), 36305.5)
    assert ours.error is not None and ours.error.stopped_by == "sglang-tui"
    assert verdict_line(ours).startswith("stopped by sglang-tui (terminate)")


def test_ctrl_c_from_outside_is_a_stop_not_a_crash() -> None:
    s = feed(startup("load_begin") + [Failure("exception", "KeyboardInterrupt", rank=None)], PROBED)
    assert s.phase is Phase.FAILED and s.error is not None and s.error.stopped_by == "outside"
    assert verdict_line(s) == "stopped (by a signal from outside sglang-tui): KeyboardInterrupt"


def test_the_parser_skips_nul_runs() -> None:
    line = b"[2025-11-29 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2)\n"
    fired = b"[2025-11-29 10:02:07] The server is fired up and ready to roll!\n"
    clean = LogParser().feed(line + fired)
    parser = LogParser()
    holed = (
        parser.feed(b"\x00" * 5000) + parser.feed(b"\x00" * 10 + line[:20]) + parser.feed(line[20:] + b"\x00" + fired)
    )
    assert holed == clean and isinstance(clean[0], ServerArgs) and clean[0].at == "2025-11-29 10:00:00"


def test_an_api_key_guarded_identity_defers_to_the_log() -> None:
    guarded = HealthResult("/model_info", "http_error", status=401, detail="HTTP 401")
    s = feed(startup(), PROBED)
    s = reduce(reduce(s, guarded, 36021.0), OK, 36021.1)
    assert s.phase is Phase.READY  # --api-key: SGLang's 401, and this launch's log vouches for the 200
    s = reduce(reduce(PROBED, guarded, 1.0), OK, 1.1)
    assert s.phase is Phase.STARTING and "needs the API key" in verdict_line(s)


def test_a_traceback_after_an_outside_sigterm_is_its_noise() -> None:
    sigterm = Milestone("shutdown", line="SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
                        **at(300))  # fmt: skip
    s = feed([sigterm], reduce(feed(startup(), PROBED), OK, 36021.0))
    s = feed([Failure("exception", "asyncio.exceptions.CancelledError")], s)
    assert s.phase is Phase.FAILED and s.error is not None and s.error.stopped_by == "outside"
    assert verdict_line(s) == f"stopped (by a signal from outside sglang-tui): {sigterm.line}"


def test_host_text_in_the_verdict_has_no_terminal_escapes() -> None:
    owner = PortOwner(port=30000, pid=7, command="evil \x1b]0;pwned\x07 --port 30000", ours=False)
    s = reduce(reduce(reduce(PROBED, owner, 1.0), SGLANG_M, 1.1), OK, 1.2)
    assert (
        s.phase is Phase.WARMUP and "\x1b" not in verdict_line(s) and "\x07" not in verdict_line(s)
    )  # uvicorn answers: warmup at most
    assert all("\x1b" not in e for e in evidence(s)) and "PID 7 (evil ?]0;pwned? --port 30000)" in verdict_line(s)


def test_with_a_log_watched_an_sglang_answering_before_the_launch_is_a_server_from_before() -> None:
    watched = Readiness.of(health_probed=True, health_port=30000, log_watched=True)
    s = reduce(reduce(watched, SGLANG_M, 1.0), OK, 1.1)  # `launch … > LOG & wait`: LOG still empty
    assert s.phase is Phase.STARTING and verdict_line(s).endswith("checking what answers (reading the log first)")
    s = reduce(s, Tick(), 4.5)  # the tail had its time: the log is empty
    assert s.phase is Phase.STARTING and verdict_line(s) == (
        "something else answers on port 30000: /model_info names m, but the log shows no launch yet "
        "(a server from before?)")  # fmt: skip
    s = feed([ServerArgs(model="m", tp_size=2, **at(0))], s)  # same model: still not this launch's answer
    assert s.phase is Phase.STARTING and "has not shown this launch's HTTP up yet" in verdict_line(s)
    s = feed(startup("load_begin")[1:], s)
    assert s.phase is Phase.LOADING_WEIGHTS  # the log, not the old server's HTTP, says where this launch is
    s = feed(startup()[len(startup("load_begin")) :], s)
    s = reduce(s, OK, 36021.0)
    assert s.phase is Phase.READY  # this launch's log vouches now
    mine = reduce(reduce(watched, PortOwner(port=30000, pid=3, ours=True), 1.0), OK, 1.1)
    assert mine.phase is Phase.READY  # the listener is the server's own
