"""The simulator's faults through `wait --launch CMD --json`: each failure's error.remedy, and the launch command with
its changes applied (text to copy: nothing here runs it); `--on-fail` gets the remedy as SGLANG_TUI_REMEDY."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.processes import Cli
from tests.helpers.sim import ROOT
from tests.helpers.sshd import free_port
from tui.commands.simulate import command_line
from tui.core.remedy import Change, apply_changes


def _wait(
    cli: Cli, tmp_path: Path, fault: str, *extra: str, launch: str | None = None, port: int | None = None
) -> tuple[subprocess.CompletedProcess[str], str, int]:
    port = port or free_port()
    log, gpus = tmp_path / "server.log", tmp_path / "gpus"
    if launch is None:
        launch = command_line(log, port, gpus, "--speed", "500", "--tp", "2", "--shards", "8", "--fault", fault)
    done = cli(
        "wait", "local", "--log", log, "--port", str(port), "--sim-gpus", gpus, "--launch", launch, "--cwd", ROOT,
        "--remote-python", sys.executable, "--timeout", "120", "--json", "--stop-on-fail", *extra, timeout=180,
    )  # fmt: skip
    return done, launch, port


def _cleanup(tmp_path: Path) -> None:
    for entry in Path("/proc").iterdir():  # only the simulator this test launched (its temp dir is on its line)
        if not entry.name.isdigit():
            continue
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(tmp_path) in line:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                pass


def _remedy(done: subprocess.CompletedProcess[str]) -> dict[str, object] | None:
    assert done.returncode == 1, done.stderr
    final = json.loads(done.stdout.strip().splitlines()[-1])
    assert final["phase"] == "failed" and final["error"] is not None, final
    remedy: dict[str, object] | None = final["error"]["remedy"]
    return remedy


def _changes(remedy: dict[str, object]) -> list[Change]:
    changes = remedy["changes"]
    assert isinstance(changes, list)
    return [Change(c["flag"], c["value"], c["was"]) for c in changes]


def test_oom_capture_quotes_sglang_and_the_on_fail_hook_gets_the_edited_command(tmp_path: Path, cli: Cli) -> None:
    said = tmp_path / "remedy.txt"
    try:
        done, launch, _ = _wait(cli, tmp_path, "oom-capture", "--on-fail", f"printenv SGLANG_TUI_REMEDY > {said}")
    finally:
        _cleanup(tmp_path)
    remedy = _remedy(done)
    assert remedy is not None and remedy["source"] == "log", remedy
    assert "Possible solutions:" in str(remedy["text"]) and "--cuda-graph-max-bs-decode" in str(remedy["text"])
    changes = _changes(remedy)
    assert [c.flag for c in changes] == ["--mem-fraction-static", "--cuda-graph-max-bs-decode"]
    fraction = changes[0]
    assert fraction.was is not None and float(fraction.value) < float(fraction.was)  # from the sim's server_args
    # the sim's server_args spells it cuda_graph_max_bs=48 (as SGLang before 0.5.23 did): half of it
    assert changes[1] == Change("--cuda-graph-max-bs-decode", "24", "48")
    assert remedy["command"] == apply_changes(launch, changes)
    assert shlex.split(str(remedy["command"]))[: len(shlex.split(launch))] == shlex.split(launch)
    hook = said.read_text().strip()
    assert hook.endswith(f"run: {remedy['command']}") and hook.startswith("SGLang says: Possible solutions:")
    lines = [line for line in done.stderr.splitlines() if line.startswith("sglang-tui wait: ")]
    remedy_at = lines.index(f"sglang-tui wait: remedy: {hook}")  # said on stderr too, before the verdict
    assert lines[remedy_at + 1].startswith("sglang-tui wait: failed"), lines


def test_the_relaunch_with_the_oom_capture_change_reaches_ready(tmp_path: Path, cli: Cli) -> None:
    """The simulator's capture fits once a remedy's change is taken (tui/sim/params.capture_fits), as a real one's
    would: the edited command, launched as it is, reaches ready."""
    try:
        done, _, port = _wait(cli, tmp_path, "oom-capture")
        remedy = _remedy(done)
        assert remedy is not None and isinstance(remedy["command"], str) and "--fault oom-capture" in remedy["command"]
        again, _, _ = _wait(cli, tmp_path, "oom-capture", launch=remedy["command"], port=port)
    finally:
        _cleanup(tmp_path)
    assert again.returncode == 0, again.stderr
    final = json.loads(again.stdout.strip().splitlines()[-1])
    assert final["phase"] == "ready" and final["error"] is None, final


@pytest.mark.parametrize(
    ("fault", "cause_word", "flags"),
    [
        ("oom-load", "weights do not fit", {"--tp-size", "--quantization"}),
        ("nccl-timeout", "NCCL rendezvous", {"--dist-timeout", "NCCL_DEBUG"}),
        ("port-in-use", "is taken", {"--port"}),
    ],
)
def test_a_table_remedy_with_the_launch_edited(tmp_path: Path, cli: Cli, fault: str, cause_word: str,
                                               flags: set[str]) -> None:  # fmt: skip
    try:
        done, launch, port = _wait(cli, tmp_path, fault)
    finally:
        _cleanup(tmp_path)
    remedy = _remedy(done)
    assert remedy is not None and remedy["source"] == "table", remedy
    assert cause_word in str(remedy["text"]) and str(remedy["ref"]).startswith("https://")
    changes = _changes(remedy)
    assert changes and {c.flag for c in changes} <= flags, changes
    assert remedy["command"] == apply_changes(launch, changes)
    if fault == "port-in-use":  # names the port, and moves the launch off it
        assert f"port {port} is taken" in str(remedy["text"])
        assert changes == [Change("--port", str(port + 1), str(port))]
        assert f"--port {port + 1}" in str(remedy["command"])
    if fault == "nccl-timeout":
        assert Change("NCCL_DEBUG", "INFO", None) in changes
        assert str(remedy["command"]).startswith("NCCL_DEBUG=INFO ")


def test_a_gated_model_says_hf_token_and_edits_nothing(tmp_path: Path, cli: Cli) -> None:
    try:
        done, _, _ = _wait(cli, tmp_path, "gated")
    finally:
        _cleanup(tmp_path)
    remedy = _remedy(done)
    assert remedy is not None and "HF_TOKEN" in str(remedy["text"]), remedy
    assert remedy["changes"] == [] and remedy["command"] is None  # a token cannot be made up


def test_a_warmup_the_server_itself_answered_500_has_no_remedy(tmp_path: Path, cli: Cli) -> None:
    try:
        done, _, _ = _wait(cli, tmp_path, "warmup-fail")
    finally:
        _cleanup(tmp_path)
    assert _remedy(done) is None  # not a proxy's answer (502): nothing known to change, so nothing said
