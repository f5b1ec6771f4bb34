"""Command line: argument parsing and wiring only. The Namespace becomes one frozen value per command in
tui/commands/options.py (the one place that reads it); each subcommand lives in tui/commands/<name>.py as
`run(options) -> int` and is imported only when used, so `replay` never loads Textual."""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
from typing import TYPE_CHECKING, NoReturn

from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_INTERRUPTED, epilog, table_epilog

if TYPE_CHECKING:
    from tui.core.settings import Settings

SUBCOMMANDS = (
    "wait", "stop", "replay", "demo", "simulate", "dump", "bench", "history", "probe", "export", "fleet",
)  # fmt: skip
# probe --timeout: /health's own answer time, from its request. SGLang's /health runs a 1-token generation, which a
# server busy serving answers in a second or more; 2 s leaves it that room, and a call then takes at most the
# process start (up to 1.4 s on a node with every CPU busy, issue 32) + 1.5 x 2 s: kubelet's timeoutSeconds 5.
PROBE_TIMEOUT_S = 2.0
# argparse's words for a value its `type=` refused, said plainly (argparse has said them this way since 3.2)
_TYPE_WORDS = {"invalid int value: ": "not a whole number: ", "invalid float value: ": "not a number: "}


class _Version(argparse.Action):
    """--version, its number read only when asked (tui.__version__ reads the package metadata)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from tui import __version__

        print(f"{parser.prog} {__version__}")  # to stdout, as argparse's own version action
        parser.exit()


#: The commands whose screens read [keys] (a clash there is fatal); headless ones never read a key.
KEYED = ("watch", "demo")


def uses_keys(argv: list[str]) -> bool:
    """The command line opens a screen that reads [keys]: the TUI, the demo, the fleet board (not --once/--json)."""
    command = argv[0] if argv else "watch"
    if command == "fleet":
        return not any(a in ("--once", "--json") for a in argv[1:])
    return command in KEYED


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors for every command: `sglang-tui wait: --port: not a port number: 'x' (try
    sglang-tui wait --help)`, with no usage block before it."""

    command_prog: str | None = None  # the subcommand typed, for the errors the top parser reports for it

    def error(self, message: str) -> NoReturn:
        prog = self.command_prog or self.prog
        message = message.removeprefix("argument ")
        for said, plain in _TYPE_WORDS.items():
            message = message.replace(said, plain)
        message += self.closest_option(message)
        self.exit(EXIT_BAD_ARGS, f"{prog}: {message} (try {prog} --help)\n")

    command_options: tuple[str, ...] = ()  # the subcommand's own options, for "did you mean"
    typed: tuple[str, ...] = ()  # the command line as typed

    def closest_option(self, message: str) -> str:
        """ " (did you mean --port?)" for a misspelt `--prot` typed (Python 3.12's habit, for every error: `probe
        --redy` fails first for want of --ready or --alive, and says which one was meant)."""
        import difflib  # only for an error: a probe's every call parses its line (issue 32)

        known = self.command_options or tuple(o for a in self._actions for o in a.option_strings)
        for word in self.typed:
            option = word.split("=", 1)[0]
            if option.startswith("--") and option not in known:
                close = difflib.get_close_matches(option, known, n=1)
                if close:
                    return (
                        f" (did you mean {close[0]}?)"
                        if option in message
                        else f" ({option}: did you mean {close[0]}?)"
                    )
        return ""


def port_number(text: str) -> int:
    """A TCP port given on the command line: a whole number from 1 to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"{text} is not a TCP port (1-65535)")
    return value


def sim_port_number(text: str) -> int:
    """The simulator's --port: a TCP port, or 0 for a non-zero node (srtctl gives those `--port 0`; params.check
    refuses it on node 0)."""
    return 0 if text.strip() == "0" else port_number(text)


def seconds(text: str) -> float:
    """A duration in seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or math.isinf(value):  # NaN too
        raise argparse.ArgumentTypeError(f"not 0 or more seconds: {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """A duration in seconds above 0 (a limit of 0 would decide at once)."""
    value = seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text} is not above 0 seconds")
    return value


def _factor(text: str) -> float:
    """A time factor above 0 (10: a 10-minute startup in a minute)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"{text} is not above 0 (10 plays a 10-minute startup in a minute)")
    return value


def _count(text: str) -> int:
    """A whole number, 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: use 1 or more")
    return value


def _temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 2.0:
        raise argparse.ArgumentTypeError(f"{text}: use 0 to 2")
    return value


def _hosts(p: argparse.ArgumentParser) -> None:
    """HOSTs (the nodes of one server, or a Slurm job) or a deployment file: watch, wait and stop."""
    p.add_argument("host", metavar="HOST", nargs="*",
                   help="user@host, an ~/.ssh/config alias, or `local` (no SSH); several: the nodes of one "
                        "multi-node server, node 0 first, each HOST or HOST:/abs/log/path; slurm:JOBID (or "
                        "LOGIN/slurm:JOBID through a login node): a Slurm job's nodes, reached with srun")  # fmt: skip
    p.add_argument("--deployment", metavar="FILE",
                   help="a TOML file listing the members (PD prefill/decode servers, a router, nodes)")  # fmt: skip


def _one_host(p: argparse.ArgumentParser) -> None:
    """One HOST: dump and bench reach one server."""
    p.add_argument("host", metavar="HOST", help="user@host, an ~/.ssh/config alias, or `local` (no SSH)")


def _server_options(p: argparse.ArgumentParser, *, python: bool = True) -> None:
    """The server's log and port on the host, and how to reach the host; `python`: the host's interpreter
    (the GPU probe, py-spy), for the commands that run one there."""
    p.add_argument("--log", metavar="PATH", help="the server's log file on the host")
    p.add_argument("--port", type=port_number, default=None,
                   help="the server's port on the host (default 30000; with neither --port nor --log, `watch` and "
                        "`wait` find the SGLang server running on the host)")  # fmt: skip
    p.add_argument("--ssh-port", type=port_number, metavar="N", help="SSH port (default: from ~/.ssh/config, else 22)")
    p.add_argument("--user", metavar="U", help="SSH user (default: from ~/.ssh/config)")
    p.add_argument("--identity", metavar="FILE", help="SSH private key")
    p.add_argument("--known-hosts", metavar="FILE", help="known_hosts file to verify the host key against")
    p.add_argument("--ssh-config", metavar="FILE", help="ssh config file (default ~/.ssh/config)")
    if python:
        p.add_argument("--remote-python", metavar="PATH", help="interpreter for the GPU probe (default python3)")


def _sim_gpus(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sim-gpus", metavar="PATH", help=argparse.SUPPRESS)  # simulator GPU state (demo, tests)


def _targets(p: argparse.ArgumentParser, what: str) -> None:
    """TARGETs as probe and export take them (tui/commands/targets.py reads each)."""
    p.add_argument("host", metavar="TARGET", nargs="*", help=what)


def _stall_after(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stall-after", type=positive_seconds, metavar="S",
                   help="call it stalled after S s with no progress (default: per phase)")  # fmt: skip


def _watching_options(p: argparse.ArgumentParser) -> None:
    """How one server is watched, and what runs at the verdict: watch and wait."""
    p.add_argument("--launch", metavar="CMD", help="command that starts the server (enables launch/restart)")
    p.add_argument("--cwd", metavar="DIR", help="working directory for --launch")
    p.add_argument("--read-only", action="store_true", help="watch only: no restart, terminate or kill")
    _stall_after(p)
    p.add_argument("--no-health", action="store_true",
                   help="do not probe /health: ready rests on the log's fired-up line (and a live process) alone")  # fmt: skip


def _accept_len_arg(text: str) -> str:
    if text.strip().lower() in ("none", "off"):
        return "none"
    try:
        float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (use e.g. 3.2, or 0 / none)") from None
    return text


def _history_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--history",
        metavar="PATH",
        help="launch history file (env SGLANG_TUI_HISTORY; default $XDG_STATE_HOME/sglang-tui/history.sqlite3)",
    )
    p.add_argument("--no-history", action="store_true", help="neither read nor record the launch history")


def _sim_options(p: argparse.ArgumentParser) -> None:
    from tui.sim.params import FAULTS  # the simulator's module for demo and simulate only

    p.add_argument("--speed", type=_factor, default=10.0, help="time factor (10: a 10-minute startup in a minute)")
    p.add_argument("--fault", choices=FAULTS, help="inject a failure")
    p.add_argument("--accept-len", type=_accept_len_arg, metavar="X",
                   help="mean speculative acceptance length, 1 to 4 (default 3.2: a drafter that works); "
                        "0 or none: no speculative decoding")  # fmt: skip


def settings_line() -> str:
    """Where the settings file is, for --help (XDG_CONFIG_HOME moves it)."""
    from tui.commands.settings import config_path

    return f"settings: {config_path()} (key remaps, theme, option defaults, per-host log and port; README: Settings)"


def build_parser(only: str | None = None) -> Parser:
    """The whole command line; `only` one of ALONE: the top parser with that command's parser alone (a probe is
    exec'd each period, and builds no other command's options)."""
    parser = Parser(
        prog="sglang-tui",
        description="Watch an SGLang server start on a GPU host.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="subcommands: wait, stop, fleet, dump, bench, probe, export, replay, history, demo, simulate "
        "(sglang-tui SUBCOMMAND --help)\n" + settings_line() + "\n\n" + table_epilog(),
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if only in ALONE:
        ALONE[only](sub)
        return _with_epilogs(parser)

    watch = sub.add_parser("watch", help="the TUI (default: `sglang-tui HOST`)", epilog=settings_line(),
                           formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    _hosts(watch)
    _server_options(watch)
    _sim_gpus(watch)
    _watching_options(watch)
    _history_options(watch)
    watch.add_argument(
        "--on-ready",
        metavar="CMD",
        help="run CMD locally once, when it turns ready (SGLANG_TUI_VERDICT etc. in its environment)",
    )
    watch.add_argument("--on-fail", metavar="CMD", help="run CMD locally once, when it fails or stalls")

    wait = sub.add_parser("wait", help="headless: wait until the server is ready, failed or stalled")
    _hosts(wait)
    _server_options(wait)
    _sim_gpus(wait)
    _watching_options(wait)
    _history_options(wait)
    wait.add_argument("--timeout", type=positive_seconds, metavar="S",
                      help="give up after S seconds (exit 7); slurm: targets count from the job's start, "
                      "not its time in the queue")  # fmt: skip
    wait.add_argument("--json", action="store_true", help="print each state change as one JSON line")
    wait.add_argument(
        "--missing-log-grace",
        type=seconds,
        default=30.0,
        metavar="S",
        help="exit 6 when the log file is still missing (or, with no --log, nothing listens on --port) after S "
        "seconds (default 30: long enough for `launch … > LOG &` to create it)",
    )
    wait.add_argument(
        "--dump-on-stall", action="store_true", help="on a stall, py-spy every process of the server (see `dump`)"
    )

    wait.add_argument(
        "--stop-on-fail",
        action="store_true",
        help="with --launch: stop what it launched on any verdict but ready (and check GPU memory came back)",
    )
    wait.add_argument(
        "--on-ready", metavar="CMD", help="run CMD locally when ready (SGLANG_TUI_VERDICT etc. in its environment)"
    )
    wait.add_argument(
        "--on-fail", metavar="CMD", help="run CMD locally on any other verdict (failed, stalled, timeout)"
    )

    stop = sub.add_parser("stop", help="headless terminate (or kill) of the server on --port")
    _hosts(stop)
    _server_options(stop)
    _sim_gpus(stop)
    stop.add_argument("--force", action="store_true", help="SIGKILL at once instead of TERM and a grace period")
    stop.add_argument("--grace", type=seconds, default=30.0, metavar="S",
                      help="seconds from TERM to KILL, for SGLang's drain (default 30)")  # fmt: skip
    stop.add_argument("--cancel-job", action="store_true",
                      help="slurm: targets: scancel the job even when another server or step still runs in it")  # fmt: skip

    dump = sub.add_parser("dump", help="py-spy of every process of the server: where each rank is stuck")
    dump.add_argument("host", metavar="HOST",
                      help="user@host, an ~/.ssh/config alias, or `local` (no SSH); slurm:JOBID or srt:LOGDIR (or "
                           "through a login node, LOGIN/…): one member of the job, --member")  # fmt: skip
    _server_options(dump)
    dump.add_argument("--member", metavar="NAME",
                      help="slurm:, srt: targets: the member whose processes are dumped (node1, decode0; needed "
                           "when the job has several)")  # fmt: skip
    dump.add_argument("--json", action="store_true", help="print the ranks, their groups and the odd ones as JSON")
    dump.add_argument(
        "--out", metavar="FILE", help="save the dump here (default: under $XDG_STATE_HOME/sglang-tui/dumps)"
    )

    bench = sub.add_parser("bench", help="measure a ready server: TTFT, output tok/s, speculative acceptance length")
    _one_host(bench)
    _server_options(bench, python=False)
    _history_options(bench)
    bench.add_argument("--requests", type=int, default=16, metavar="N", help="requests in all (the cap; default 16)")
    bench.add_argument("--concurrency", type=int, default=4, metavar="N", help="requests at a time (default 4)")
    bench.add_argument("--max-tokens", type=int, default=256, metavar="N", help="new tokens per request (default 256)")
    bench.add_argument(
        "--prompts", metavar="FILE", help='JSONL, one {"text": "…"} per line (default: the built-in set)'
    )
    bench.add_argument("--timeout", type=positive_seconds, default=300.0, metavar="S",
                       help="stop after S seconds (default 300)")  # fmt: skip
    bench.add_argument("--temperature", type=_temperature, default=0.0, metavar="T",
                       help="sampling temperature, 0 to 2 (default 0)")  # fmt: skip
    bench.add_argument("--json", action="store_true", help="print the result as one JSON object")

    _probe_parser(sub)
    _export_parser(sub)
    _fleet_parser(sub)

    replay = sub.add_parser("replay", help="parse a saved log; print the timeline and final state")
    replay.add_argument(
        "logfile", metavar="LOGFILE", nargs="+", help="one log; several: the nodes of one server, node 0 first"
    )
    replay.add_argument("--json", action="store_true", help="print one JSON object")
    replay.add_argument(
        "--record",
        nargs="?",
        const="local",
        metavar="HOST",
        help="add the log's launch to the history, keyed by HOST (default `local`)",
    )
    _history_options(replay)

    history = sub.add_parser("history", help="past launches from the history store")
    history.add_argument("host", nargs="?", metavar="HOST", help="only the launches on this host")
    history.add_argument("--json", action="store_true", help="print one JSON object")
    history.add_argument("--compare", nargs=2, type=int, metavar=("A", "B"), help="two launches side by side, by id")
    history.add_argument("--limit", type=_count, default=20, metavar="N", help="at most N launches (default 20)")
    _history_options(history)

    demo = sub.add_parser("demo", help="a simulated 8-GPU EAGLE3 startup, watched by the real TUI")
    _sim_options(demo)
    demo.add_argument("--read-only", action="store_true", help="no restart, terminate or kill")
    demo.add_argument("--fleet", action="store_true",
                      help="seven simulated servers at once on the fleet board (mixed speeds, a stall, an OOM, one "
                           "slower than its history); q stops them all")  # fmt: skip
    demo.add_argument(
        "--stall-after",
        type=positive_seconds,
        metavar="S",
        help="call it stalled after S real seconds with no progress (default: 5 simulated minutes / --speed)",
    )

    simulate = sub.add_parser("simulate", help="run the simulated SGLang server alone")
    simulate.add_argument("--log", required=True, metavar="PATH")
    simulate.add_argument("--port", type=sim_port_number, required=True)
    simulate.add_argument("--host", default="127.0.0.1", help="where HTTP listens, as SGLang's (e.g. ::1)")
    simulate.add_argument("--tp", type=int, default=8)
    simulate.add_argument("--shards", type=int, default=64)
    simulate.add_argument(
        "--format",
        default="0.5.23",
        metavar="VERSION",
        help="log format: 0.5.9, 0.5.23 or main (SGLang main through 2026-10: the newest shapes)",
    )
    simulate.add_argument("--speculative", default="EAGLE3", help="EAGLE3, EAGLE, or none")
    simulate.add_argument("--gpu-state", metavar="PATH", help="where to publish simulated GPU memory (JSON)")
    simulate.add_argument("--traffic", type=float, default=0.0, metavar="N",
                          help="background requests per simulated minute once ready (default 0)")  # fmt: skip
    simulate.add_argument("--eplb-every", type=float, default=0.0, metavar="S",
                          help="once ready, an EPLB rebalance on every rank each S simulated seconds (0: off)")  # fmt: skip
    simulate.add_argument("--seed", type=int, default=0, help="seeded jitter of a few percent per phase (0: none)")
    simulate.add_argument(
        "--loader",
        default="default",
        metavar="KIND",
        help="default, or multithread (shards finish in bursts, bytes grow steadily)",
    )
    simulate.add_argument(
        "--slow",
        default="",
        metavar="PHASE=FACTOR",
        help="make a phase slower, e.g. cuda_graph=2 (phases: loading_weights, cuda_graph)",
    )
    simulate.add_argument("--backdate", type=float, default=0.0, metavar="S",
                          help="the log reads as begun S seconds earlier (its stamps and mtime): attach tests")  # fmt: skip
    simulate.add_argument("--fault-seconds", type=float, metavar="S",
                          help="real seconds a silent fault runs whatever --speed is (jit-compile 48, download 30)")  # fmt: skip
    simulate.add_argument("--nnodes", type=int, default=1, help="nodes of a multi-node launch (ranks split evenly)")
    simulate.add_argument("--node-rank", type=int, default=0, metavar="R", help="this node's rank (0 serves HTTP)")
    simulate.add_argument("--dist-init-addr", metavar="HOST:PORT", help="where node 0 listens for the other nodes")
    simulate.add_argument("--disaggregation-mode", choices=("prefill", "decode"), help="a PD prefill or decode server")
    simulate.add_argument("--disaggregation-bootstrap-port", type=int, default=8998, metavar="N",
                          help="prefill: the bootstrap port (default 8998)")  # fmt: skip
    simulate.add_argument("--forkserver", choices=("private", "daemon"),
                          help="SGLANG_EARLY_FORKSERVER=1: ranks forked by a forkserver, a child of the launcher (private) "
                               "or a detached daemon every launch shares (record: $SGLANG_FORKSERVER_FILE, "
                               "default GPU_STATE/sglang_forkserver.json)")  # fmt: skip
    simulate.add_argument("--mem-fraction-static", type=float, metavar="F",
                          help="as SGLang's (default 0.87); below it, an oom-capture fault's capture fits (a remedy works)")  # fmt: skip
    simulate.add_argument("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs", dest="cuda_graph_max_bs", type=int,
                          metavar="N", help="as SGLang's; below the default, an oom-capture fault's capture fits")  # fmt: skip
    simulate.add_argument("--router", action="store_true", help="a simulated PD router instead of a server")
    simulate.add_argument("--prefill", action="append", default=[], metavar="URL[@BOOTSTRAP]",
                          help="--router: a prefill worker (and its bootstrap port, default 8998)")  # fmt: skip
    simulate.add_argument("--decode", action="append", default=[], metavar="URL", help="--router: a decode worker")
    _sim_options(simulate)
    return _with_epilogs(parser)


def _with_epilogs(parser: Parser) -> Parser:
    for name, command in subcommand_parsers(parser).items():  # every command's codes, from the one table
        command.formatter_class = argparse.RawDescriptionHelpFormatter
        command.epilog = (command.epilog + "\n\n" if command.epilog else "") + epilog(name)
    return parser


def _probe_parser(sub: argparse._SubParsersAction[Parser]) -> None:
    probe = sub.add_parser(
        "probe", help="one-shot verdict for exec probes (kubelet, systemd, Slurm, CI): --ready or --alive",
        description="Run where the server runs (`probe local --port N --log PATH`) or over SSH. Each call reads only "
        "the log bytes written since the last one (a memo under $XDG_STATE_HOME/sglang-tui/probe) and asks /health "
        "once.",
    )  # fmt: skip
    _targets(probe, "one server: HOST, HOST:PORT or HOST:PORT:LOG (HOST: user@host, an ~/.ssh/config alias, `local`)")
    _server_options(probe, python=False)
    mode = probe.add_mutually_exclusive_group(required=True)
    mode.add_argument("--ready", action="store_true", help="exit 0 only when ready (this server's /health 200)")
    mode.add_argument("--alive", action="store_true",
                      help="exit 0 unless stalled or failed (a livenessProbe: restarts a hung startup, never a slow one)")  # fmt: skip
    probe.add_argument("--json", action="store_true", help='print the `wait --json` object (with a "probe" key)')
    _stall_after(probe)
    probe.add_argument("--timeout", type=positive_seconds, default=PROBE_TIMEOUT_S, metavar="S",
                       help="what /health's answer may take, counted from its request, never from the process "
                            "start (default 2: /health is a 1-token generation, which a busy server answers late; "
                            "the log read before it gets half of S; set kubelet's timeoutSeconds to 5)")  # fmt: skip
    probe.add_argument("--no-health", action="store_true",
                       help="do not probe /health: ready rests on the log's fired-up line and a live process")  # fmt: skip
    _history_options(probe)


def _export_parser(sub: argparse._SubParsersAction[Parser]) -> None:
    export = sub.add_parser(
        "export", help="Prometheus metrics (sglang_tui_*) of one server, a deployment or a fleet",
        description="Watch each TARGET (HOST, HOST:PORT or HOST:PORT:LOG; or --deployment FILE) as `wait` does, "
        "each Slurm job (slurm:JOBID, srt:LOGDIR) as the fleet board's row, and serve the readiness model at "
        "http://ADDR/metrics.",
    )  # fmt: skip
    _targets(export, "HOST, HOST:PORT or HOST:PORT:LOG, one server each; slurm:JOBID, slurm:, srt:LOGDIR (LOGIN/…)")
    export.add_argument("--deployment", metavar="FILE", help="a TOML file listing the members (as `wait` takes it)")
    _server_options(export)
    _sim_gpus(export)
    export.add_argument("--listen", metavar="ADDR", help="serve /metrics at HOST:PORT (`:PORT`: every interface)")
    export.add_argument("--textfile", metavar="DIR",
                        help="also write DIR/sglang-tui.prom for node_exporter's textfile collector (atomically)")  # fmt: skip
    _stall_after(export)
    export.add_argument("--no-health", action="store_true", help="do not probe /health")
    _history_options(export)


def _fleet_parser(sub: argparse._SubParsersAction[Parser]) -> None:
    fleet = sub.add_parser(
        "fleet", help="one board for many servers: phase, time in phase, ETA, health, GPUs, vs usual",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Each TARGET: HOST (every SGLang server found running there), HOST:PORT or HOST:PORT:LOG (one "
        "server). Servers on one SSH host share one connection. On a terminal: the board (/ filter, s sort, Enter "
        "opens the server, Esc back, ? help).",
    )  # fmt: skip
    _targets(fleet, "HOST (every SGLang server found running there), HOST:PORT, HOST:PORT:LOG, slurm:JOBID, slurm:")
    _server_options(fleet)
    _sim_gpus(fleet)
    fleet.add_argument(
        "--inventory", metavar="FILE", help="a TOML file of [[server]] tables (name, target, port, log, group)"
    )
    fleet.add_argument("--once", action="store_true", help="print the table once and exit with the worst row's code")
    fleet.add_argument("--json", action="store_true",
                       help='one JSON line per server state change (the `wait --json` object plus "name")')  # fmt: skip
    fleet.add_argument("--timeout", type=positive_seconds, default=30.0, metavar="S",
                       help="--once: wait at most S s for every row's first state (default 30)")  # fmt: skip
    fleet.add_argument("--read-only", action="store_true", help="watch only: no restart, terminate or kill")
    _stall_after(fleet)
    fleet.add_argument("--no-health", action="store_true", help="do not probe /health")
    _history_options(fleet)


ALONE = {"probe": _probe_parser, "export": _export_parser, "fleet": _fleet_parser}  # build_parser(only=NAME)


def subcommand_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's parser by name: the README tests read the options each one accepts (argparse offers no
    public way to reach them)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _ssh_aliases(argv: list[str]) -> set[str]:
    """The plain `Host` names of the ssh config (--ssh-config FILE, else ~/.ssh/config); patterns are left out."""
    path = os.path.expanduser("~/.ssh/config")
    for i, word in enumerate(argv):
        if word == "--ssh-config" and i + 1 < len(argv):
            path = argv[i + 1]
        elif word.startswith("--ssh-config="):
            path = word.split("=", 1)[1]
    names: set[str] = set()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                words = line.split()
                if len(words) >= 2 and words[0].lower() == "host":
                    names.update(w for w in words[1:] if not any(c in w for c in "*?!"))
    except OSError:
        pass
    return names


def _etc_hosts() -> set[str]:
    try:
        with open("/etc/hosts", encoding="utf-8", errors="replace") as f:
            return {w for line in f for w in line.split("#", 1)[0].split()[1:]}
    except OSError:
        return set()


def looks_like_a_mistyped_command(word: str, argv: list[str]) -> bool:
    """A first word that cannot be a host: no dot, @ or colon, not `local`, no ssh alias, not in /etc/hosts."""
    if any(c in word for c in ".@:") or word in ("local", "localhost"):
        return False
    return word not in _ssh_aliases(argv) and word not in _etc_hosts()


def _options_of(parser: argparse.ArgumentParser, command: str) -> tuple[str, ...]:
    """The option strings the subcommand `command` takes (for the top parser's "did you mean")."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return tuple(o for a in action.choices[command]._actions for o in a.option_strings)
    return ()


def _options(namespace: argparse.Namespace, settings: Settings) -> object:
    """The command's one frozen value; a probe's from its own module (the others' records are no probe's cost)."""
    if namespace.command == "probe":
        from tui.commands.probe_options import probe_options

        return probe_options(namespace, settings)
    from tui.commands.options import from_namespace

    return from_namespace(namespace, settings)


def main(argv: list[str] | None = None) -> int:
    """The command line; what it prints reaches the terminal through terminal_safe (commands/safe_output.py)."""
    from tui.commands.dependency_warnings import keep_dependency_warnings_out

    keep_dependency_warnings_out()  # first, before asyncssh, textual or httpx is imported (issue 29)
    from tui.commands.stack_dump import dump_stacks_on_usr1

    dump_stacks_on_usr1()
    from tui.commands.safe_output import safe_output

    with safe_output():
        return _main(list(sys.argv[1:] if argv is None else argv))


def _main(argv: list[str]) -> int:
    if argv and argv[0] not in SUBCOMMANDS and argv[0] != "watch" and not argv[0].startswith("-"):
        if looks_like_a_mistyped_command(argv[0], argv):
            print(
                f"sglang-tui: unknown command or host: {argv[0]} (commands: watch, {', '.join(SUBCOMMANDS)}; "
                "a host is user@host, a name with a dot, an ~/.ssh/config alias, or `local`)",
                file=sys.stderr,
            )
            return EXIT_BAD_ARGS
        argv.insert(0, "watch")
    parser = build_parser(only=argv[0] if argv else None)
    from tui.commands.settings import load
    from tui.core.settings import SettingsError

    try:
        settings = load(keys=uses_keys(argv))
    except SettingsError as err:
        print(f"sglang-tui: {err}", file=sys.stderr)
        return EXIT_BAD_ARGS
    if argv and argv[0] in ("watch", *SUBCOMMANDS):
        parser.command_prog = f"sglang-tui {argv[0]}"  # "unrecognized arguments" is the top parser's to say
        parser.command_options = _options_of(parser, argv[0])
        Parser.typed = tuple(argv[1:])  # every parser of this command line (a subcommand's reports its own errors)
    namespace = parser.parse_args(argv)  # a bad command line: one line, SystemExit(2) (Parser.error)
    if not namespace.command:
        parser.print_help()
        return EXIT_BAD_ARGS
    from tui.commands.probe_options import OptionsError

    try:
        options = _options(namespace, settings)
    except OptionsError as err:  # options that cannot go together: the same one line, before anything is reached
        parser.error(str(err))
    module = importlib.import_module(f"tui.commands.{namespace.command}")
    try:
        return int(module.run(options))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
