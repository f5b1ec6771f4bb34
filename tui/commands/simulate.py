"""`sglang-tui simulate`: run the simulated SGLang server alone (for tests, demos, CI pipelines)."""

from __future__ import annotations

import os
import shlex
import sys

from tui.commands.options import SimulateOptions
from tui.core.exitcodes import EXIT_BAD_ARGS
from tui.sim.params import check


def command_line(log: str | os.PathLike[str], port: int, gpu_dir: str | os.PathLike[str], *options: str) -> str:
    """The shell command that starts the simulator with this interpreter (every word quoted): what `demo` and the
    tests hand to `--launch`."""
    words = [sys.executable, "-m", "tui", "simulate", "--log", str(log), "--port", str(port),
             "--gpu-state", str(gpu_dir), *options]  # fmt: skip
    return " ".join(shlex.quote(w) for w in words)


def run(opts: SimulateOptions) -> int:
    params = opts.params
    if opts.router:
        from tui.sim.router import run_router

        if not opts.prefill and not opts.decode:
            print("sglang-tui simulate: --router needs workers: --prefill URL and/or --decode URL", file=sys.stderr)
            return EXIT_BAD_ARGS
        return run_router(params.log, params.port, list(opts.prefill), list(opts.decode))
    problem = check(params)
    if problem is None:
        try:
            with open(params.log, "ab"):
                pass
        except OSError as err:
            problem = f"--log {params.log}: cannot write the log ({err.strerror}); pick a writable path"
    if problem is None and params.gpu_state:
        try:
            os.makedirs(params.gpu_state, exist_ok=True)
        except OSError as err:
            problem = f"--gpu-state {params.gpu_state}: cannot create the directory ({err.strerror})"
    if problem is not None:
        print(f"sglang-tui simulate: {problem}", file=sys.stderr)
        return EXIT_BAD_ARGS
    from tui.sim.server import run_server

    return run_server(params)
