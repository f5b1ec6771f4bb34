"""The command line as one frozen value per command (issue 22): built once from argv, refused in one line by the
parser's own validators, filled by the settings under what was typed, and offering each command only the options
that do something for it."""

from __future__ import annotations

import dataclasses

import pytest

from tests.helpers.options import options_of
from tui.cli import build_parser, main, subcommand_parsers
from tui.commands.options import (
    BenchOptions,
    DumpOptions,
    ExportOptions,
    OptionsError,
    StopOptions,
    WaitOptions,
    WatchOptions,
)
from tui.core.config import WatchConfig
from tui.core.settings import Given, Settings

CONNECTION = {"--log", "--port", "--ssh-port", "--user", "--identity", "--known-hosts", "--ssh-config"}
WATCHING = {"--launch", "--cwd", "--read-only", "--stall-after", "--no-health", "--on-ready", "--on-fail"}
HISTORY = {"--history", "--no-history"}
# What each command that reaches a host offers, beyond -h: everything here does something for that command.
OFFERED = {
    "watch": CONNECTION | WATCHING | HISTORY | {"--deployment", "--remote-python", "--sim-gpus"},
    "wait": CONNECTION | WATCHING | HISTORY | {"--deployment", "--remote-python", "--sim-gpus", "--timeout", "--json",
                                               "--dump-on-stall", "--stop-on-fail", "--missing-log-grace"},
    "stop": CONNECTION | {"--deployment", "--remote-python", "--sim-gpus", "--force", "--grace", "--cancel-job"},
    "dump": CONNECTION | {"--remote-python", "--json", "--out", "--member"},
    "bench": CONNECTION | HISTORY | {"--requests", "--concurrency", "--max-tokens", "--prompts", "--timeout",
                                     "--temperature", "--json"},
    "probe": CONNECTION | HISTORY | {"--ready", "--alive", "--json", "--stall-after", "--timeout", "--no-health"},
    "export": CONNECTION | HISTORY | {"--deployment", "--remote-python", "--sim-gpus", "--listen", "--textfile",
                                      "--stall-after", "--no-health"},
}  # fmt: skip


def exit_code(argv: list[str]) -> int:
    """`sglang-tui ARGV…`'s exit code, for a command line that ends before any command runs (argparse exits)."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert isinstance(done.value.code, int)
    return done.value.code


@pytest.mark.parametrize("command", sorted(OFFERED))
def test_each_command_offers_only_the_options_that_do_something_for_it(command: str) -> None:
    parser = subcommand_parsers(build_parser())[command]
    offered = {s for action in parser._actions for s in action.option_strings} - {"-h", "--help"}
    assert offered == OFFERED[command], (sorted(offered - OFFERED[command]), sorted(OFFERED[command] - offered))


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["stop", "local", "--launch", "x"], "unrecognized arguments: --launch x"),
        (["dump", "local", "--on-ready", "x"], "unrecognized arguments: --on-ready x"),
        (["dump", "local", "--stall-after", "5"], "unrecognized arguments: --stall-after 5"),
        (["bench", "local", "--remote-python", "/py"], "unrecognized arguments: --remote-python /py"),
        (["dump", "gpu1", "gpu2"], "unrecognized arguments: gpu2"),
        (["wait", "local", "--port", "0"], "--port: 0 is not a TCP port (1-65535)"),
        (["stop", "local", "--port", "70000"], "--port: 70000 is not a TCP port (1-65535)"),
        (["dump", "local", "--port", "x"], "--port: not a port number: 'x'"),
        (["bench", "local", "--ssh-port", "0"], "--ssh-port: 0 is not a TCP port (1-65535)"),
        (["wait", "local", "--timeout", "0"], "--timeout: 0 is not above 0 seconds"),
        (["wait", "local", "--stall-after", "-5"], "--stall-after: not 0 or more seconds: '-5'"),
        (["watch", "local", "--stall-after", "nan"], "--stall-after: not 0 or more seconds: 'nan'"),
        (["stop", "local", "--grace", "x"], "--grace: not a number: 'x'"),
        (["bench", "local", "--temperature", "3"], "--temperature: 3: use 0 to 2"),
        (["history", "--limit", "0"], "--limit: 0: use 1 or more"),
        (["demo", "--speed", "0"], "--speed: 0 is not above 0 (10 plays a 10-minute startup in a minute)"),
        (["simulate", "--log", "x", "--port", "70000"], "--port: 70000 is not a TCP port (1-65535)"),
    ],
)
def test_a_bad_value_or_an_option_the_command_does_not_take_is_one_line_and_exit_2(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_code(argv) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err == f"sglang-tui {argv[0]}: {said} (try sglang-tui {argv[0]} --help)\n"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["wait"], "give a HOST (or several, node 0 first), or --deployment FILE"),
        (["stop"], "give a HOST (or several, node 0 first), or --deployment FILE"),
        (["wait", "local", "--launch", "x", "--read-only"],
         "--launch starts a server and --read-only never changes one; drop one of them"),
    ],
)  # fmt: skip
def test_options_that_cannot_go_together_are_one_line_and_exit_2(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_code(argv) == 2
    assert capsys.readouterr().err == f"sglang-tui {argv[0]}: {said} (try sglang-tui {argv[0]} --help)\n"


def test_the_options_are_frozen_and_typed() -> None:
    opts = options_of(WaitOptions, "wait", "gpu1", "--port", "31000", "--timeout", "9.5", "--ssh-port", "2222")
    assert (opts.server.port, opts.timeout, opts.target.ssh.port) == (31000, 9.5, 2222)
    assert opts.target.hosts == ("gpu1",) and opts.target.spec().host == "gpu1" and opts.target.spec().ssh.port == 2222
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.server.port = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.timeout = 1.0  # type: ignore[misc]


SETTINGS = Settings(
    defaults=Given(port=31000, remote_python="/opt/default/python"),
    hosts={"gpu1": Given(log="/data/gpu1.log", port=30001), "gpu2": Given(remote_python="/opt/gpu2/python")},
)


@pytest.mark.parametrize(
    ("argv", "port", "log", "python"),
    [
        (["wait", "gpu1"], 30001, "/data/gpu1.log", "/opt/default/python"),  # the host's own, over [defaults]
        (["wait", "gpu1", "--port", "32000"], 32000, "/data/gpu1.log", "/opt/default/python"),  # typed wins
        (["wait", "gpu1", "--log=/x.log", "--remote-python", "/py"], 30001, "/x.log", "/py"),
        (["wait", "gpu2"], 31000, None, "/opt/gpu2/python"),
        (["wait", "other"], 31000, None, "/opt/default/python"),  # [defaults] only
        (["wait", "gpu1", "gpu2"], 31000, None, "/opt/default/python"),  # several: no host's own table
    ],
)
def test_the_command_line_over_the_hosts_settings_over_the_defaults(
    argv: list[str], port: int, log: str | None, python: str
) -> None:
    opts = options_of(WaitOptions, *argv, settings=SETTINGS)
    assert (opts.server.port, opts.server.log, opts.server.remote_python) == (port, log, python)
    assert opts.target.port_named  # typed, or set in the settings: it must name the same server as the log


def test_with_nothing_said_the_port_is_the_default_and_watch_and_wait_find_the_server() -> None:
    wait = options_of(WaitOptions, "wait", "gpu1")
    assert wait.server == WatchConfig(port=30000) and wait.target.discover and not wait.target.port_named
    assert options_of(WatchOptions, "watch", "gpu1").target.discover
    stop = options_of(StopOptions, "stop", "gpu1")
    assert stop.server.port == 30000 and not stop.target.discover and not stop.target.port_named
    for argv in (["--port", "30000"], ["--log", "/x.log"], ["--launch", "true"], ["gpu2"]):
        assert not options_of(WaitOptions, "wait", "gpu1", *argv).target.discover, argv
    assert not options_of(WaitOptions, "wait", "gpu1", settings=SETTINGS).target.discover  # the settings' port


def test_dump_and_bench_take_one_host_and_the_connection_options() -> None:
    dump = options_of(DumpOptions, "dump", "gpu1", "--port", "31000", "--log", "/x.log", "--out", "/tmp/d.txt")
    assert (dump.target.host, dump.server.port, dump.server.log, dump.out) == ("gpu1", 31000, "/x.log", "/tmp/d.txt")
    bench = options_of(BenchOptions, "bench", "gpu1", "--requests", "3", "--no-history")
    assert (bench.target.host, bench.requests, bench.history) == ("gpu1", 3, None)


def test_export_reads_slurm_jobs_apart_from_the_plain_targets() -> None:
    opts = options_of(ExportOptions, "export", "--listen", ":0", "slurm:12", "gpu1:8000", "login/srt:/out/7/logs",
                      "--port", "31000")  # fmt: skip
    assert [t.name for t in opts.servers] == ["gpu1:8000"] and opts.servers[0].port == 8000
    assert [(j.name, j.slurm.job_id, j.slurm.login, j.srt, j.port) for j in opts.jobs] == [
        ("slurm:12", "12", None, None, 31000), ("login/srt:/out/7/logs", None, "login", "login/srt:/out/7/logs", 31000)
    ]  # fmt: skip
    with pytest.raises(OptionsError, match="a TARGET is given twice"):
        options_of(ExportOptions, "export", "--listen", ":0", "slurm:12", "slurm:12")
    with pytest.raises(OptionsError, match="is no Slurm target"):
        options_of(ExportOptions, "export", "--listen", ":0", "slurm:x y")


def test_the_simulator_takes_port_0_only_off_node_0(capsys: pytest.CaptureFixture[str]) -> None:
    """srtctl gives a worker's non-zero nodes `--port 0` (they serve no HTTP); node 0 must have a port."""
    assert main(["simulate", "--log", "x", "--port", "0"]) == 2
    assert capsys.readouterr().err == (
        "sglang-tui simulate: --port 0: use a TCP port between 1 and 65535 (0 only with a --node-rank above 0)\n"
    )
