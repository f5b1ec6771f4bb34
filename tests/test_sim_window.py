"""The simulator prints the line kinds a window of the log may start at (issue 21), and a window cut from its real
log reads as that phase, "attached mid-run": DeepGEMM's JIT before capture, EPLB rebalances while serving, and a
gated Hugging Face repo that fails the launch before its server_args line."""

from __future__ import annotations

import io

from tests.helpers.processes import Sims
from tests.helpers.sim import wait_for_log
from tui.commands.replay import replay_stream
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line

SPEED = 500.0


def window(log: bytes, start: bytes, end: bytes | None = None) -> Readiness:
    """The log from the line holding `start` (to the line holding `end`), replayed as `replay` would."""
    begin = log.rindex(b"\n", 0, log.index(start)) + 1
    stop = log.rindex(b"\n", 0, log.index(end, begin)) + 1 if end is not None else len(log)
    return replay_stream(io.BytesIO(log[begin:stop]), "window")


def test_windows_of_a_real_startup_log_read_as_their_phase(sim: Sims) -> None:
    server = sim(speed=SPEED, tp=2, shards=4, speculative="none", extra=("--eplb-every", "20"))
    log = wait_for_log(server, b"[EPLBManager] rebalance end")
    jit = window(log, b"Try DeepGEMM JIT Compiling", b"Capture ")
    assert jit.phase is Phase.KV_CACHE and jit.mid_run is not None and jit.mid_run.kind == "jit_kernel"
    assert jit.mid_run.rank in ("TP0", "TP1")  # every rank compiles; whichever printed first
    assert f"attached mid-run: the log starts at {jit.mid_run.rank}'s DeepGEMM JIT compile" in verdict_line(jit)
    ready = window(log, b"Try DeepGEMM JIT Compiling", b"[EPLBManager]")
    assert ready.phase is Phase.READY and ready.mid_run == jit.mid_run
    serving = window(log, b"[EPLBManager] rebalance start")
    assert serving.phase is Phase.SERVING and serving.error is None
    assert serving.mid_run is not None and serving.mid_run.kind == "eplb_begin"
    whole = replay_stream(io.BytesIO(log), "whole")
    assert whole.mid_run is None and whole.phase is Phase.SERVING  # the whole log: its launch is in view


def test_a_gated_repo_fails_before_the_launch_line(sim: Sims) -> None:
    server = sim(fault="gated", speed=SPEED, tp=2, shards=4)
    assert server.wait(20.0) == 1
    log = server.log.read_bytes()
    assert b"server_args=" not in log and b"Cannot access gated repo for url" in log
    s = replay_stream(io.BytesIO(log), "gated")
    assert s.phase is Phase.FAILED and s.error is not None and s.error.kind == "model_not_found"
    assert s.error.line == "OSError: You are trying to access a gated repo."
