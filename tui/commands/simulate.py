"""`sglang-tui simulate`: run the simulated SGLang server alone (for tests, demos, CI pipelines)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from tui.core.exitcodes import EXIT_BAD_ARGS
from tui.sim.params import SimParams, check


def command_line(log: str | os.PathLike[str], port: int, gpu_dir: str | os.PathLike[str], *options: str) -> str:
    """The shell command that starts the simulator with this interpreter (every word quoted): what `demo` and the
    tests hand to `--launch`."""
    words = [sys.executable, "-m", "tui", "simulate", "--log", str(log), "--port", str(port),
             "--gpu-state", str(gpu_dir), *options]  # fmt: skip
    return " ".join(shlex.quote(w) for w in words)


def _accept_len(value: object) -> float | None:
    """`--accept-len X`: None when not given; 0 (or `none`) turns speculative decoding off."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in ("none", "off", "0", "0.0"):
        return 0.0
    return float(text)  # argparse's type already checked it parses


def params_from_args(args: argparse.Namespace) -> SimParams:
    speculative = None if str(args.speculative).lower() == "none" else str(args.speculative).upper()
    accept = _accept_len(getattr(args, "accept_len", None))
    if accept == 0.0:
        speculative = None
    extra = {} if accept is None or accept == 0.0 else {"accept_len": accept}
    return SimParams(
        log=os.path.abspath(args.log),
        port=args.port,
        host=str(getattr(args, "host", None) or "127.0.0.1"),
        tp=args.tp,
        shards=args.shards,
        speed=args.speed,
        fault=args.fault,
        fmt=args.format,
        speculative=speculative,
        gpu_state=os.path.abspath(args.gpu_state) if args.gpu_state else None,
        traffic=float(getattr(args, "traffic", 0.0) or 0.0),
        eplb_every=float(getattr(args, "eplb_every", 0.0) or 0.0),
        seed=int(getattr(args, "seed", 0) or 0),
        loader=str(getattr(args, "loader", "default") or "default"),
        slow=str(getattr(args, "slow", "") or ""),
        fault_seconds=getattr(args, "fault_seconds", None),
        nnodes=int(getattr(args, "nnodes", 1) or 1),
        node_rank=int(getattr(args, "node_rank", 0) or 0),
        dist_init_addr=getattr(args, "dist_init_addr", None),
        disaggregation_mode=getattr(args, "disaggregation_mode", None),
        bootstrap_port=int(getattr(args, "disaggregation_bootstrap_port", 8998) or 8998),
        **extra,
    )


def run(args: argparse.Namespace) -> int:
    if getattr(args, "router", False):
        from tui.sim.router import run_router

        if not args.prefill and not args.decode:
            print("sglang-tui simulate: --router needs workers: --prefill URL and/or --decode URL", file=sys.stderr)
            return EXIT_BAD_ARGS
        return run_router(os.path.abspath(args.log), args.port, list(args.prefill), list(args.decode))
    params = params_from_args(args)
    problem = check(params)
    if problem is None:
        try:
            with open(params.log, "ab"):
                pass
        except OSError as err:
            problem = f"--log {args.log}: cannot write the log ({err.strerror}); pick a writable path"
    if problem is None and params.gpu_state:
        try:
            os.makedirs(params.gpu_state, exist_ok=True)
        except OSError as err:
            problem = f"--gpu-state {args.gpu_state}: cannot create the directory ({err.strerror})"
    if problem is not None:
        print(f"sglang-tui simulate: {problem}", file=sys.stderr)
        return EXIT_BAD_ARGS
    from tui.sim.server import run_server

    return run_server(params)
