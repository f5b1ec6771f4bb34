"""`wait --log TYPO` while a live server answers on the port (issue 30): the missing log is the verdict. It exits 6
after --missing-log-grace, its line naming the missing log first, never waiting on a server it cannot see the log
of. On the real simulator and the real `wait`."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.processes import Cli, Sims
from tests.helpers.sim import wait_for_log
from tui.core.exitcodes import EXIT_NOTHING

GRACE_S = 3.0


def test_a_typo_in_log_exits_6_whatever_answers_on_the_port(sim: Sims, cli: Cli, tmp_path: Path) -> None:
    server = sim(speed=100.0, shards=4, speculative="none")
    wait_for_log(server, b"fired up", 90)
    typo = tmp_path / "typo.log"
    done = cli("wait", "local", "--log", str(typo), "--port", str(server.port), "--sim-gpus", str(server.gpu_state),
               "--missing-log-grace", str(GRACE_S), "--timeout", "120", timeout=150)  # fmt: skip
    assert done.returncode == EXIT_NOTHING, (done.returncode, done.stderr)  # the grace ended it, not the timeout (7)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"sglang-tui wait: nothing found: log file missing: {typo} (a server answers on port "), last
    assert "is the path right?" in last
