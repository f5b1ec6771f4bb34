"""--on-ready / --on-fail in the TUI: run locally once when the verdict turns ready / failed, with the verdict in
the environment, in a thread worker (the screen keeps folding batches while the hook runs)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from tests.helpers.options import options_of
from tests.helpers.processes import Spawner
from tests.helpers.ui_fakes import (
    HOST,
    FakeBatchSource,
    FakeClock,
    Step,
    gpus,
    play,
    startup_failed_oom,
    startup_to_ready,
)
from tui.commands.options import WatchOptions
from tui.commands.wait import tui_hook
from tui.ui.app import SglangTui, UiSources


def _app(source: FakeBatchSource, clock: FakeClock, opts: WatchOptions) -> SglangTui:
    hook = tui_hook(opts.hooks, opts.target.host, opts.server.port)
    sources = UiSources(batches=source.batches, host_label=HOST, port=30000, verdict_hook=hook)
    return SglangTui(sources, clock=clock)


async def _until(pilot: object, condition, tries: int = 3000) -> None:
    for _ in range(tries):
        if condition():
            return
        await pilot.pause(0.01)  # type: ignore[attr-defined]
    raise AssertionError("condition not met")


def _args(tmp_path: Path, **hooks: str) -> WatchOptions:
    argv = ["watch", "gpu-node-7", "--port", "30000"]
    for name, cmd in hooks.items():
        argv += [f"--{name.replace('_', '-')}", cmd]
    return options_of(WatchOptions, *argv)


def test_no_hook_without_the_options(tmp_path: Path) -> None:
    opts = _args(tmp_path)
    assert tui_hook(opts.hooks, opts.target.host, opts.server.port) is None


async def test_on_ready_runs_once_with_the_verdict_and_does_not_block_the_screen(
    tmp_path: Path, spawn: Spawner
) -> None:
    # The hook waits on a FIFO: the shell's open blocks until the test opens it to write. No process is started
    # while it waits (a `sleep 0.02` loop forked fifty a second, burning through this host's 32768 pids).
    go, out, failed = tmp_path / "go", tmp_path / "env", tmp_path / "failed"
    os.mkfifo(go)
    cmd = f"read word < {shlex.quote(str(go))}; env > {shlex.quote(str(out))}"
    args = _args(tmp_path, on_ready=cmd, on_fail=f"touch {shlex.quote(str(failed))}")
    source, clock = FakeBatchSource(), FakeClock()
    app = _app(source, clock, args)
    async with app.run_test(size=(160, 48)) as pilot:
        await play(pilot, source, clock, startup_to_ready())
        assert app.state.phase.value in ("ready", "serving")
        before = app.batches_seen
        await play(pilot, source, clock, [Step(clock.t + 1, [gpus(115.0)]), Step(clock.t + 2, [gpus(116.0)])])
        # folded while the hook still waits; if it ended, what it said (m39, m69: it had ended, and nothing said how)
        said = [n.message for n in app._notifications]
        assert app.batches_seen == before + 2 and app.hooks_done == [], (said, failed.exists())
        writer = os.open(go, os.O_RDWR)  # never blocks; held open until the hook has read, so the word is not lost
        try:
            os.write(writer, b"go\n")
            await _until(pilot, lambda: app.hooks_done == ["ready"])
        finally:
            os.close(writer)
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert env["SGLANG_TUI_VERDICT"] == "ready" and env["SGLANG_TUI_EXIT"] == "0"
    assert (env["SGLANG_TUI_HOST"], env["SGLANG_TUI_PORT"]) == ("gpu-node-7", "30000")
    assert not (tmp_path / "failed").exists()


async def test_on_fail_runs_on_a_failure_and_a_failing_hook_is_said(tmp_path: Path, spawn: Spawner) -> None:
    out = tmp_path / "env"
    args = _args(tmp_path, on_fail=f"env > {shlex.quote(str(out))}; exit 3")
    source, clock = FakeBatchSource(), FakeClock()
    app = _app(source, clock, args)
    async with app.run_test(size=(160, 48)) as pilot:
        await play(pilot, source, clock, startup_failed_oom())
        await _until(pilot, lambda: app.hooks_done == ["fail"])
        await _until(pilot, lambda: any("exited 3" in n.message for n in app._notifications))
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert env["SGLANG_TUI_VERDICT"] == "failed" and env["SGLANG_TUI_EXIT"] == "1"
    assert "(out of memory)" in env["SGLANG_TUI_REASON"]  # the verdict line, worded once (tui.core.wording)
