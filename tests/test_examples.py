"""examples/: the Prometheus alert rules checked and unit-tested by promtool (Debian's `prometheus` package), and
the Kubernetes manifests parsed (there is no cluster here), each probe command read by sglang-tui's own parser."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.options import options_of
from tests.helpers.processes import Spawner
from tui.cli import build_parser
from tui.commands.export_probes import ROUTES
from tui.commands.options import ExportOptions, ProbeOptions
from tui.commands.probe import BUSY_START_S, call_bound_s

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MANIFESTS = sorted((EXAMPLES / "kubernetes").glob("*.yaml"))


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], cwd=EXAMPLES / "prometheus", capture_output=True, text=True, timeout=120)


def test_the_alert_rules_pass_promtool_check_and_their_unit_tests(spawn: Spawner) -> None:
    checked = promtool("check", "rules", "sglang-tui-alerts.yml")
    assert checked.returncode == 0 and "SUCCESS: 3 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = promtool("test", "rules", "sglang-tui-alerts.test.yml")
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_promtool_fails_a_rule_that_alerts_on_a_stop(spawn: Spawner, tmp_path: Path) -> None:
    """The unit tests can fail: the failed rule without its `kind!="stopped"` alerts for gpu-d, stopped."""
    rules = (EXAMPLES / "prometheus" / "sglang-tui-alerts.yml").read_text()
    assert 'sglang_tui_failed{kind!="stopped"} == 1' in rules
    (tmp_path / "sglang-tui-alerts.yml").write_text(rules.replace('{kind!="stopped"}', ""))
    (tmp_path / "t.yml").write_text((EXAMPLES / "prometheus" / "sglang-tui-alerts.test.yml").read_text())
    done = subprocess.run(
        ["promtool", "test", "rules", "t.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and 'kind="stopped"' in done.stdout + done.stderr


def containers(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if doc["kind"] == "Pod":
        yield from doc["spec"]["containers"]
    elif doc["kind"] == "LeaderWorkerSet":
        template = doc["spec"]["leaderWorkerTemplate"]
        for part in ("leaderTemplate", "workerTemplate"):
            yield from template[part]["spec"]["containers"]
    else:
        raise AssertionError(f"an example of kind {doc['kind']}")


ROUTE_OF = {mode: route for route, mode in ROUTES.items()}


def export_options(command: list[str]) -> ExportOptions:
    assert command[:2] == ["sglang-tui", "export"], command
    return options_of(ExportOptions, *command[1:])


def probe_options(command: list[str]) -> ProbeOptions:
    assert command[:2] == ["sglang-tui", "probe"], command
    return options_of(ProbeOptions, *command[1:])


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_each_manifest_parses_and_its_probes_are_sglang_tui_probe_commands(path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert docs
    probes = 0
    for doc in docs:
        listens = {
            export_options(c["command"]).listen[1] for c in containers(doc) if c.get("command", [])[1:2] == ["export"]
        }
        for container in containers(doc):
            assert "startupProbe" not in container  # liveness knows slow from hung from the start (see the comments)
            for kind, mode in (("readinessProbe", "ready"), ("livenessProbe", "alive")):
                probe = container.get(kind)
                if probe is None:
                    continue
                if "httpGet" in probe:  # asked of an export sidecar of this pod: its route for the mode, its port
                    assert probe["httpGet"]["path"] == ROUTE_OF[mode] and probe["httpGet"]["port"] in listens
                    probes += 1
                    continue
                opts = probe_options(probe["exec"]["command"])
                assert opts.ready == (mode == "ready")
                assert opts.server.log and opts.server.host == "local"
                # the probe answers before kubelet kills it, even where a busy node slows its start
                assert call_bound_s(opts.timeout) + BUSY_START_S <= probe["timeoutSeconds"]
                probes += 1
    assert probes >= 2


def test_the_lws_group_probes_readiness_on_its_leader_only_and_workers_without_health() -> None:
    doc = yaml.safe_load((EXAMPLES / "kubernetes" / "sglang-lws.yaml").read_text())
    template = doc["spec"]["leaderWorkerTemplate"]
    leader = template["leaderTemplate"]["spec"]["containers"][0]
    worker = template["workerTemplate"]["spec"]["containers"][0]
    assert "readinessProbe" in leader and "readinessProbe" not in worker
    assert not probe_options(worker["livenessProbe"]["exec"]["command"]).health  # a worker serves no HTTP


def test_every_command_the_examples_page_shows_is_one_the_cli_accepts() -> None:
    import re
    import shlex

    page = (EXAMPLES / "README.md").read_text()
    shown = [
        line.split("#", 1)[0] for block in re.findall(r"```sh\n(.*?)```", page, re.S) for line in block.splitlines()
    ]
    commands = [shlex.split(line) for line in shown if line.startswith("sglang-tui ")]
    assert len(commands) >= 5
    for words in commands:
        build_parser().parse_args(words[1:])  # an option it does not know exits 2 (SystemExit fails the test)
