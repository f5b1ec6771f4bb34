"""The TUI on an srtctl job (`sglang-tui srt:LOGDIR`) in a real terminal (tmux), on the real 2-node cluster: the job
laid out as srtctl lays one out (tests/test_srt_job.py), its PD workers simulated; the members pane lists each
worker with its role and node, the header reaches ready with the roles counted and says the benchmark's word where
it disagrees with the workers' (0 generated tokens), and `q` leaves nothing of ours in the job.

One worker (prefill1) starts late, as a real one does (its container and imports before its first line): its log is
there, empty, when the TUI opens. The TUI once took srtctl's allocated port for it then (its log named none yet),
watched it on a port it never used, and read it "exited (no process of the server is left)" while it served: the
flake of 8f5b5b2 (2 in 7 runs, when the simulator's first line came after the TUI's look)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers.processes import Tmux
from tests.helpers.slurm import NODES, SlurmCluster
from tests.helpers.tui_tmux import TuiPane
from tests.test_slurm import our_steps
from tests.test_srt_job import COMPLETED, MODEL_READY, WORKERS, ZERO_TOKENS, srt_job

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (a real terminal)")


def test_the_tui_on_an_srtctl_job_shows_its_workers_with_their_roles_and_reaches_ready(
    cluster: SlurmCluster, tmux: Tmux, tmp_path: Path
) -> None:
    # the pane's own directory apart from the job's: what the pane leaves is found by it (never the job's workers)
    for sub in ("job", "tui"):
        (tmp_path / sub).mkdir()
    # srtctl says its benchmark completed while benchmark.out reports 0 generated tokens: the header says so, as the
    # board's STATUS cell and `wait` do (the fact the fold made from the job's sweep log and benchmark.out)
    job = srt_job(cluster, tmp_path / "job", late={"prefill1": 5}, said=MODEL_READY + COMPLETED, benchmark=ZERO_TOKENS)
    pane = TuiPane(tmux, tmp_path / "tui", (160, 50))
    pane.start(f"srt:{job.log_dir}", "--remote-python", sys.executable, env=cluster.env)
    try:
        screen = pane.until(lambda s: "ready: 2P 1D" in "\n".join(pane.header_rows()), "the job ready", timeout=180)
        members = [row.split() for row in pane.until_box("members")]
        rows = [words[:4] for words in members if words and words[0] in ("prefill0", "prefill1", "decode0")]
        assert rows == [
            [f"{mode}{index}", mode, node, "ready"] for mode, index, node in WORKERS
        ], screen  # fmt: skip
        assert {node for _, _, node in WORKERS} == set(NODES)
        pane.until(lambda s: "0 generated tokens" in "\n".join(pane.header_rows()), "the benchmark's word", timeout=60)
        header = "\n".join(pane.header_rows())
        assert "BENCHMARK  benchmark.out reports 0 generated tokens (1 of 1 run(s))" in header, header
        pane.keys("q")
        assert pane.exit_code() == 0
    finally:
        pane.stop()
    assert our_steps(cluster, job.job) == []  # the TUI's steps inside the job ended with it
