"""`probe` as kubelet execs it (issue 32): a fresh process that loads only what one look needs, and whose
`--timeout` is /health's own answer time, counted from the request, never from the process start (a busy node
slows the start; that must not eat /health's time). Facts, not timings: which modules a real call loaded, and
which answer a call gave after a start slower than its whole --timeout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers.processes import Cli, Sims, child_env
from tests.helpers.sim import ROOT, wait_ready

# what a probe never needs: the TUI and its toolkit, the HTTP/SSH clients it does without on a local look, the
# simulator, the TOML parser (no settings file here), and every other command
NEVER = ("textual", "rich", "httpx", "asyncssh", "tui.ui", "tui.sim", "tomllib", "tui.history.store")
# nor the other commands' option records, nor what reads a Slurm job, an srtctl job or a deployment (one server here)
NOT_FOR_ONE_SERVER = ("tui.commands.options", "tui.core.slurmjob", "tui.core.srtlayout", "tui.core.deployment")
# nor, on a local look (tui.sources.now: no event loop), asyncio and what it loads (a tenth of a call's CPU)
NO_EVENT_LOOP = ("asyncio", "ssl", "concurrent", "logging", "tui.sources.local")
# nor what only a wrong option or theme name needs (difflib), nor the idna codec of a name lookup (a loopback address)
SMALL_BUT_NEEDLESS = ("difflib", "encodings.idna")
OTHER_COMMANDS = ("watch", "wait", "stop", "dump", "bench", "replay", "history", "demo", "simulate", "export", "fleet")


def test_a_ready_probe_loads_no_ui_no_simulator_and_no_other_command(sim: Sims, tmp_path: Path) -> None:
    server = wait_ready(sim(speed=200.0, shards=4))
    argv = ["sglang-tui", "probe", "local", "--port", str(server.port), "--log", str(server.log), "--ready"]
    code = (
        "import sys, runpy, json\n"
        f"sys.argv = {argv!r}\n"
        "try:\n    runpy.run_module('tui', run_name='__main__')\nexcept SystemExit as exit:\n    code = exit.code\n"
        "print(json.dumps({'exit': code, 'modules': sorted(sys.modules)}))"
    )
    env = {"SGLANG_TUI_PROBE_DIR": str(tmp_path / "memo"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=child_env(env)
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["exit"] == 0, done.stdout + done.stderr  # the whole path ran: log, processes, /health, fold
    loaded = set(found["modules"])
    assert "tui.commands.probe" in loaded and "tui.sources.probe_look" in loaded
    assert not {m for m in loaded if any(m == n or m.startswith(n + ".") for n in NEVER)}
    assert not loaded & {f"tui.commands.{name}" for name in OTHER_COMMANDS}
    assert not loaded & set(NOT_FOR_ONE_SERVER)
    assert "tui.sources.now" in loaded
    assert not {m for m in loaded if any(m == n or m.startswith(n + ".") for n in NO_EVENT_LOOP)}
    assert not loaded & set(SMALL_BUT_NEEDLESS)


def test_a_start_slower_than_the_timeout_leaves_health_its_whole_timeout(sim: Sims, cli: Cli, tmp_path: Path) -> None:
    """The call starts 7 s before it runs (as on a node whose every CPU is busy: kubelet's clock runs from the
    exec), and the server answers /health 3 s late (stopped, then continued): within --timeout 6 from the
    request, so ready. Counted from the process start, as before issue 32, /health got nothing (timeout, exit 7)."""
    server = wait_ready(sim(speed=200.0, shards=4))
    late = (
        f"sleep 7; kill -STOP {server.pid}; (sleep 3; kill -CONT {server.pid}) & "
        'exec "$@"'
    )  # fmt: skip
    try:
        done = cli(
            "probe", "local", "--port", str(server.port), "--log", str(server.log), "--ready", "--json",
            "--timeout", "6", prefix=("sh", "-c", late, "sh"), env={"SGLANG_TUI_PROBE_DIR": str(tmp_path / "memo")},
        )  # fmt: skip
    finally:
        subprocess.run(["kill", "-CONT", str(server.pid)], check=False)
    report = json.loads(done.stdout)
    assert (done.returncode, report["probe"]["verdict"]) == (0, "ready"), done.stdout + done.stderr
    assert "/health answers 200" in report["probe"]["line"]
