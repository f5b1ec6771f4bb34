"""Command line: argument parsing and wiring only. Each subcommand lives in tui/commands/<name>.py as
`run(args: argparse.Namespace) -> int` and is imported only when used, so `replay` never loads Textual."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from tui import __version__
from tui.sim.params import FAULTS

SUBCOMMANDS = ("wait", "stop", "replay", "demo", "simulate", "dump", "bench", "history")


def _host_options(p: argparse.ArgumentParser, *, watching: bool = True) -> None:
    """The host and SSH options; `watching=False` (stop) leaves out what only a watch means."""
    p.add_argument("host", metavar="HOST", nargs="*",
                   help="user@host, an ~/.ssh/config alias, or `local` (no SSH); several: the nodes of one "
                        "multi-node server, node 0 first, each HOST or HOST:/abs/log/path; slurm:JOBID (or "
                        "LOGIN/slurm:JOBID through a login node): a Slurm job's nodes, reached with srun")  # fmt: skip
    p.add_argument("--deployment", metavar="FILE",
                   help="a TOML file listing the members (PD prefill/decode servers, a router, nodes)")  # fmt: skip
    p.add_argument("--log", metavar="PATH", help="the server's log file on the host")
    p.add_argument("--port", type=int, default=None,
                   help="the server's port on the host (default 30000; with neither --port nor --log, `watch` and "
                        "`wait` find the SGLang server running on the host)")  # fmt: skip
    p.add_argument("--ssh-port", type=int, metavar="N", help="SSH port (default: from ~/.ssh/config, else 22)")
    p.add_argument("--user", metavar="U", help="SSH user (default: from ~/.ssh/config)")
    p.add_argument("--identity", metavar="FILE", help="SSH private key")
    p.add_argument("--known-hosts", metavar="FILE", help="known_hosts file to verify the host key against")
    p.add_argument("--ssh-config", metavar="FILE", help="ssh config file (default ~/.ssh/config)")
    p.add_argument("--remote-python", metavar="PATH", default="python3", help="interpreter for the GPU probe")
    p.add_argument("--sim-gpus", metavar="PATH", help=argparse.SUPPRESS)  # simulator GPU state (demo, tests)
    if not watching:
        return
    p.add_argument("--launch", metavar="CMD", help="command that starts the server (enables launch/restart)")
    p.add_argument("--cwd", metavar="DIR", help="working directory for --launch")
    p.add_argument("--read-only", action="store_true", help="watch only: no restart, terminate or kill")
    p.add_argument(
        "--stall-after", type=float, metavar="S", help="call it stalled after S s with no progress (default: per phase)"
    )
    p.add_argument("--no-health", action="store_true",
                   help="do not probe /health: ready rests on the log's fired-up line (and a live process) alone")  # fmt: skip
    _history_options(p)


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
    p.add_argument("--speed", type=float, default=10.0, help="time factor (10: a 10-minute startup in a minute)")
    p.add_argument("--fault", choices=FAULTS, help="inject a failure")
    p.add_argument("--accept-len", type=_accept_len_arg, metavar="X",
                   help="mean speculative acceptance length, 1 to 4 (default 3.2: a drafter that works); "
                        "0 or none: no speculative decoding")  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sglang-tui",
        description="Watch an SGLang server start on a GPU host.",
        epilog="subcommands: wait, stop, dump, bench, replay, history, demo, simulate (sglang-tui SUBCOMMAND --help)",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    watch = sub.add_parser("watch", help="the TUI (default: `sglang-tui HOST`)")
    _host_options(watch)
    watch.add_argument(
        "--on-ready",
        metavar="CMD",
        help="run CMD locally once, when it turns ready (SGLANG_TUI_VERDICT etc. in its environment)",
    )
    watch.add_argument("--on-fail", metavar="CMD", help="run CMD locally once, when it fails or stalls")

    wait = sub.add_parser("wait", help="headless: wait until the server is ready, failed or stalled")
    _host_options(wait)
    wait.add_argument("--timeout", type=float, metavar="S", help="give up after S seconds (exit 2)")
    wait.add_argument("--json", action="store_true", help="print each state change as one JSON line")
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

    stop = sub.add_parser(
        "stop", help="headless terminate (or kill) of the server on --port",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit codes:\n"
        "  0  stopped: every process of the server is gone and its GPU memory came back\n"
        "  1  not stopped: a process is still alive, or GPU memory is still held or not confirmed\n"
        "  2  bad arguments: --port and --log (or config.toml's log) name two different servers (nothing stopped)\n"
        "  3  nothing found: no server on --port / --log (nothing was stopped)\n"
        "  4  cannot connect to the host, or authentication failed\n"
        "  5  cannot see the server's processes (another user's; run as that user or root)\n"
        "  6  slurm:JOBID: no such running job, or no SGLang process in it (nothing stopped)",
    )  # fmt: skip
    _host_options(stop, watching=False)
    stop.add_argument("--force", action="store_true", help="SIGKILL at once instead of TERM and a grace period")
    stop.add_argument("--grace", type=float, default=30.0, metavar="S",
                      help="seconds from TERM to KILL, for SGLang's drain (default 30)")  # fmt: skip

    dump = sub.add_parser("dump", help="py-spy of every process of the server: where each rank is stuck")
    _host_options(dump)
    dump.add_argument("--json", action="store_true", help="print the ranks, their groups and the odd ones as JSON")
    dump.add_argument(
        "--out", metavar="FILE", help="save the dump here (default: under $XDG_STATE_HOME/sglang-tui/dumps)"
    )

    bench = sub.add_parser("bench", help="measure a ready server: TTFT, output tok/s, speculative acceptance length")
    _host_options(bench)
    bench.add_argument("--requests", type=int, default=16, metavar="N", help="requests in all (the cap; default 16)")
    bench.add_argument("--concurrency", type=int, default=4, metavar="N", help="requests at a time (default 4)")
    bench.add_argument("--max-tokens", type=int, default=256, metavar="N", help="new tokens per request (default 256)")
    bench.add_argument(
        "--prompts", metavar="FILE", help='JSONL, one {"text": "…"} per line (default: the built-in set)'
    )
    bench.add_argument("--timeout", type=float, default=300.0, metavar="S", help="stop after S seconds (default 300)")
    bench.add_argument("--temperature", type=float, default=0.0, metavar="T", help="sampling temperature (default 0)")
    bench.add_argument("--json", action="store_true", help="print the result as one JSON object")

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
    history.add_argument("--limit", type=int, default=20, metavar="N", help="at most N launches (default 20)")
    _history_options(history)

    demo = sub.add_parser("demo", help="a simulated 8-GPU EAGLE3 startup, watched by the real TUI")
    _sim_options(demo)
    demo.add_argument("--read-only", action="store_true", help="no restart, terminate or kill")
    demo.add_argument(
        "--stall-after",
        type=float,
        metavar="S",
        help="call it stalled after S real seconds with no progress (default: 5 simulated minutes / --speed)",
    )

    simulate = sub.add_parser("simulate", help="run the simulated SGLang server alone")
    simulate.add_argument("--log", required=True, metavar="PATH")
    simulate.add_argument("--port", type=int, required=True)
    simulate.add_argument("--host", default="127.0.0.1", help="where HTTP listens, as SGLang's (e.g. ::1)")
    simulate.add_argument("--tp", type=int, default=8)
    simulate.add_argument("--shards", type=int, default=64)
    simulate.add_argument("--format", default="0.5.23", metavar="VERSION", help="log format: 0.5.9 or 0.5.23")
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
    simulate.add_argument("--fault-seconds", type=float, metavar="S",
                          help="real seconds a silent fault runs whatever --speed is (jit-compile 48, download 30)")  # fmt: skip
    simulate.add_argument("--nnodes", type=int, default=1, help="nodes of a multi-node launch (ranks split evenly)")
    simulate.add_argument("--node-rank", type=int, default=0, metavar="R", help="this node's rank (0 serves HTTP)")
    simulate.add_argument("--dist-init-addr", metavar="HOST:PORT", help="where node 0 listens for the other nodes")
    simulate.add_argument("--disaggregation-mode", choices=("prefill", "decode"), help="a PD prefill or decode server")
    simulate.add_argument("--disaggregation-bootstrap-port", type=int, default=8998, metavar="N",
                          help="prefill: the bootstrap port (default 8998)")  # fmt: skip
    simulate.add_argument("--router", action="store_true", help="a simulated PD router instead of a server")
    simulate.add_argument("--prefill", action="append", default=[], metavar="URL[@BOOTSTRAP]",
                          help="--router: a prefill worker (and its bootstrap port, default 8998)")  # fmt: skip
    simulate.add_argument("--decode", action="append", default=[], metavar="URL", help="--router: a decode worker")
    _sim_options(simulate)
    return parser


def subcommand_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's parser by name: main sets the settings' defaults on them, and the README tests read the
    options each one accepts (argparse offers no public way to reach them)."""
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


def _slurm_target_problem(args: argparse.Namespace, hosts: list[str]) -> str | None:
    """Why a `slurm:` target cannot go with the rest of the command line (None when it can)."""
    from tui.core.slurmjob import is_slurm_target

    if not any(is_slurm_target(h) for h in hosts):
        return None
    if len(hosts) > 1 or getattr(args, "deployment", None):
        return (
            "a slurm: target is a whole job (Slurm names its nodes): give it alone, without other HOSTs or --deployment"
        )
    if args.command in ("dump", "bench"):
        return f"{args.command} does not reach Slurm jobs yet: give a node's HOST (its sshd), or watch with wait slurm:JOBID"
    if getattr(args, "launch", None):
        return "--launch starts a server itself; a Slurm job's server is started by its batch script (sbatch)"
    return None


def main(argv: list[str] | None = None) -> int:
    """The command line; what it prints reaches the terminal through terminal_safe (commands/safe_output.py)."""
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
            return 2
        argv.insert(0, "watch")
    parser = build_parser()
    from tui.commands.settings import load
    from tui.core.settings import SettingsError

    try:
        settings = load()
    except SettingsError as err:
        print(f"sglang-tui: {err}", file=sys.stderr)
        return 2
    defaults = {k: v for k, v in vars(settings.defaults).items() if v is not None}
    for sub in subcommand_parsers(parser).values():
        known = {a.dest for a in sub._actions}
        sub.set_defaults(**{k: v for k, v in defaults.items() if k in known})
    args = parser.parse_args(argv)
    args.settings = settings
    if not args.command:
        parser.print_help()
        return 2
    if getattr(args, "launch", None) and getattr(args, "read_only", False):
        # read-only promises the server is never changed; a launch changes it: say so rather than pick one
        print(f"sglang-tui {args.command}: --launch starts a server and --read-only never changes one; drop one of them",
              file=sys.stderr)  # fmt: skip
        return 2
    if hasattr(args, "host") and isinstance(args.host, list):
        hosts = args.host
        if not hosts and not getattr(args, "deployment", None):
            parser.error(f"{args.command}: give a HOST (or several, node 0 first), or --deployment FILE")
        # one HOST behaves exactly as before; several (or a deployment file) go to the deployment commands
        args.hosts = hosts
        args.host = hosts[0] if hosts else None
        problem = _slurm_target_problem(args, hosts)
        if problem:
            print(f"sglang-tui {args.command}: {problem}", file=sys.stderr)
            return 2
    if hasattr(args, "host"):
        one = args.host if isinstance(args.host, str) and len(getattr(args, "hosts", [args.host])) == 1 else None
        own = settings.hosts.get(one) if one is not None else None
        for key, value in (vars(own) if own is not None else {}).items():
            flag = "--" + key.replace("_", "-")
            typed = any(a == flag or a.startswith(flag + "=") for a in argv)
            if value is not None and not typed and hasattr(args, key):  # an option this command has
                setattr(args, key, value)
    if hasattr(args, "port") and args.command != "simulate" and args.port is None:
        # neither --port nor a settings default: watch/wait of one HOST without --log find the server there
        args.discover = (
            args.command in ("watch", "wait")
            and len(args.hosts) == 1
            and not args.log
            and not getattr(args, "deployment", None)
            and not getattr(args, "launch", None)
        )
        args.port = 30000
        args.port_defaulted = True  # nobody asked for this port: it need not agree with --log (stop)
    module = importlib.import_module(f"tui.commands.{args.command}")
    try:
        return int(module.run(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
