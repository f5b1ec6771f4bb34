"""PD disaggregation over real SSH: a prefill and a decode server (the simulator) behind the simulated
router, listed in a --deployment TOML file; the verdict is over all three."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.sim import SimServer, start_sim
from tests.helpers.sshd import Sshd, free_port, sshd_available

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(not sshd_available(), reason="OpenSSH sshd is not installed")


class Pd:
    def __init__(self, tmp_path: Path, prefill_speed: float) -> None:
        self.boot = free_port()
        (tmp_path / "prefill").mkdir()
        (tmp_path / "decode").mkdir()
        self.prefill = start_sim(tmp_path / "prefill", tp=2, shards=8, speed=prefill_speed, speculative="none",
                                 extra=["--disaggregation-mode", "prefill", "--disaggregation-bootstrap-port",
                                        str(self.boot)])  # fmt: skip
        self.decode = start_sim(tmp_path / "decode", tp=2, shards=8, speed=200, speculative="none",
                                extra=["--disaggregation-mode", "decode"])  # fmt: skip
        self.router_port = free_port()
        self.router_log = tmp_path / "router.log"
        argv = [sys.executable, "-m", "tui", "simulate", "--router", "--log", str(self.router_log), "--port",
                str(self.router_port), "--prefill", f"http://127.0.0.1:{self.prefill.port}@{self.boot}",
                "--decode", f"http://127.0.0.1:{self.decode.port}"]  # fmt: skip
        self.router = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                       stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        self.file = tmp_path / "deployment.toml"
        self.file.write_text(
            self._member("decode", "decode", self.decode)
            + self._member("prefill", "prefill", self.prefill, f"bootstrap_port = {self.boot}\n")
            + f'[[member]]\nname = "router"\nrole = "router"\nhost = "testhost"\nport = {self.router_port}\n'
            f'log = "{self.router_log}"\n'
        )

    @staticmethod
    def _member(name: str, role: str, sim: SimServer, extra: str = "") -> str:
        return (f'[[member]]\nname = "{name}"\nrole = "{role}"\nhost = "testhost"\nport = {sim.port}\n'
                f'log = "{sim.log}"\n{extra}')  # fmt: skip

    def stop(self) -> None:
        for sim in (self.prefill, self.decode):
            sim.stop()
        try:
            os.killpg(self.router.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.router.wait(10)


@pytest.fixture
def pd_slow(tmp_path: Path) -> Iterator[Pd]:
    pd = Pd(tmp_path, prefill_speed=1.0)
    yield pd
    pd.stop()


@pytest.fixture
def pd_fast(tmp_path: Path) -> Iterator[Pd]:
    pd = Pd(tmp_path, prefill_speed=200)
    yield pd
    pd.stop()


def _wait(sshd: Sshd, pd: Pd, timeout: str) -> subprocess.CompletedProcess[str]:
    gpus = ",".join([str(pd.decode.gpu_state), str(pd.prefill.gpu_state), ""])
    return subprocess.run(
        [sys.executable, "-m", "tui", "wait", "--deployment", str(pd.file), "--ssh-config", str(sshd.ssh_config),
         "--remote-python", sys.executable, "--sim-gpus", gpus, "--timeout", timeout, "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=float(timeout) + 60,
    )  # fmt: skip


def test_prefill_slow_decode_ready_router_up_is_not_ready_and_names_prefill(sshd: Sshd, pd_slow: Pd) -> None:
    out = _wait(sshd, pd_slow, "12")
    assert out.returncode == 7, out.stderr  # timed out: not ready
    last = out.stderr.splitlines()[-1]
    # decode reads "ready" until the router's own probes reach it, then "serving": either way it is up
    assert re.search(r"decode (ready|serving), prefill still", last), last
    assert "router up but has no healthy prefill worker" in last, last
    final = json.loads(out.stdout.splitlines()[-1])
    members = {m["name"]: m for m in final["members"]}
    assert members["decode"]["phase"] in ("ready", "serving") and members["router"]["phase"] == "ready"
    assert members["prefill"]["phase"] not in ("ready", "serving", "failed")
    assert final["phase"] == members["prefill"]["phase"]


def test_all_up_is_ready(sshd: Sshd, pd_fast: Pd) -> None:
    out = _wait(sshd, pd_fast, "90")
    assert out.returncode == 0, out.stderr
    final = json.loads(out.stdout.splitlines()[-1])
    assert final["phase"] in ("ready", "serving")  # serving once the router's probes reached decode first: up
    assert [m["role"] for m in final["members"]] == ["decode", "prefill", "router"]
    assert "router up, 2/2 workers healthy" in out.stderr.splitlines()[-1]
    assert "is healthy" in pd_fast.router_log.read_text()  # the router's own worker-health lines
