"""The readiness model as Prometheus text (tui.core.metrics): the families, their labels and values for states
folded from real logs and events, the format's rules, and README's table of them. Pure: no process."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_readiness_phases import feed, startup
from tui.core.events import ControlResult, GpuInfo, GpuSnapshot, HealthResult, LogActivity, ServerProcess, Tick
from tui.core.logparse import LogParser
from tui.core.metrics import FAILURE_KINDS, FAMILIES, Exported, escape, exposition
from tui.core.past import Past, PastLaunch
from tui.core.readiness import reduce
from tui.core.state import PHASE_ORDER, Readiness

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "fixtures" / "logs"
PROBED = Readiness.of(health_probed=True, health_port=30000, log_watched=True, process_watched=True)
LINE = re.compile(r'^([a-z_]+)(\{(?:[a-z_]+="(?:[^"\\]|\\.)*",?)*\})? (-?[0-9.e+]+|NaN|[+-]Inf)$')


def replayed(name: str) -> Readiness:
    data = (LOGS / name).read_bytes()
    parser, s = LogParser(), Readiness()
    for event in [LogActivity(len(data), data), *parser.feed(data), *parser.flush()]:
        s = reduce(s, event, 1000.0)
    return s


def samples(text: str) -> dict[str, float]:
    """`name{labels}` -> value, every sample line checked against the format on the way."""
    found = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = LINE.match(line)
        assert match, f"not an exposition line: {line!r}"
        found[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return found


def test_every_family_has_its_help_and_type_and_its_lines_together() -> None:
    text = exposition(
        [
            Exported("a", replayed("v0.5.23-tp8-eagle3-ready.log")),
            Exported("b", replayed("fail-oom-capture-0.5.23.log")),
        ],
        1010.0,
    )
    names = [line.split("{")[0].split(" ")[0] for line in text.splitlines() if not line.startswith("#")]
    blocks = [n for i, n in enumerate(names) if i == 0 or names[i - 1] != n]
    assert len(blocks) == len(set(blocks))  # each family's samples in one run (the format requires it)
    for name in set(names):
        assert f"# HELP {name} " in text and f"# TYPE {name} gauge" in text
        assert not name.endswith("_total")  # gauges only: `_total` is a counter's
        assert name.startswith("sglang_tui_")
    samples(text)


def test_phase_is_one_gauge_per_phase_and_a_failure_one_per_kind() -> None:
    found = samples(exposition([Exported("gpu-1", replayed("fail-oom-capture-0.5.23.log"))], 1010.0))
    phases = {p.value: found[f'sglang_tui_phase{{server="gpu-1",phase="{p.value}"}}'] for p in PHASE_ORDER}
    assert phases == {p.value: float(p.value == "failed") for p in PHASE_ORDER}
    kinds = {k: found[f'sglang_tui_failed{{server="gpu-1",kind="{k}"}}'] for k in FAILURE_KINDS}
    assert kinds == {k: float(k == "oom") for k in FAILURE_KINDS}
    assert found['sglang_tui_ready{server="gpu-1"}'] == 0


def test_a_stop_is_its_own_kind() -> None:
    s = reduce(
        reduce(feed(startup("weights"), PROBED), ServerProcess(True, (7,)), 36010.0),
        ControlResult("terminate", True),
        36011.0,
    )
    found = samples(exposition([Exported("s", s)], 36012.0))
    assert found['sglang_tui_failed{server="s",kind="stopped"}'] == 1
    assert found['sglang_tui_failed{server="s",kind="other"}'] == 0


def test_a_startup_in_progress_shows_shards_quiet_time_budget_and_gpu_memory_per_rank() -> None:
    s = reduce(feed(startup("weights"), PROBED), ServerProcess(True, (7,)), 36010.0)
    gpus = GpuSnapshot("sim", (GpuInfo(0, used_bytes=40 << 30, total_bytes=80 << 30), GpuInfo(1, used_bytes=39 << 30)))
    s = reduce(s, gpus, 36010.0).evolve(stall_after=60.0)
    s = reduce(s, Tick(), 36030.0)
    found = samples(exposition([Exported("s", s)], 36030.0))
    assert found['sglang_tui_phase{server="s",phase="loading_weights"}'] == 1
    assert (found['sglang_tui_weight_shards_loaded{server="s"}'], found['sglang_tui_weight_shards{server="s"}']) == (
        4,
        4,
    )
    assert found['sglang_tui_stall_budget_seconds{server="s"}'] == 60
    assert found['sglang_tui_quiet_seconds{server="s"}'] == 36030 - s.last_progress_at
    assert found['sglang_tui_stalled{server="s"}'] == 0
    used = {k: v for k, v in found.items() if k.startswith("sglang_tui_gpu_memory_used_bytes")}
    assert sorted(used.values()) == [39 << 30, 40 << 30]
    assert all('gpu="' in k and 'rank="' in k for k in used)
    assert 'sglang_tui_ready_in_seconds{server="s"}' not in found  # no history: no honest ETA, left out


def test_ready_gives_the_startup_by_phase_and_history_the_usual_and_the_ratio() -> None:
    s = reduce(
        reduce(feed(startup(), PROBED), ServerProcess(True, (7,)), 36020.5), HealthResult("/health", "ok", 200), 36021.0
    )
    past = Past("k", (PastLaunch(1, 20.0, (("loading_weights", 6.0), ("cuda_graph", 4.0))),
                      PastLaunch(2, 22.0, (("loading_weights", 8.0), ("cuda_graph", 4.0)))))  # fmt: skip
    found = samples(exposition([Exported("s", s.evolve(past=past))], 36022.0))
    assert found['sglang_tui_ready{server="s"}'] == 1 and found['sglang_tui_health_ok{server="s"}'] == 1
    took = {k: v for k, v in found.items() if k.startswith("sglang_tui_startup_phase_seconds")}
    assert took['sglang_tui_startup_phase_seconds{server="s",phase="loading_weights"}'] == 7  # 10:00:04 → :11
    assert found['sglang_tui_startup_seconds{server="s"}'] == sum(took.values())
    assert found['sglang_tui_usual_phase_seconds{server="s",phase="loading_weights"}'] == 7  # the median
    assert found['sglang_tui_past_launches{server="s"}'] == 2
    loading = reduce(feed(startup("weights"), PROBED), ServerProcess(True, (7,)), 36010.0).evolve(past=past)
    ratio = samples(exposition([Exported("s", loading)], loading.phase_since + 14.0))
    assert ratio['sglang_tui_phase_usual_ratio{server="s"}'] == 2.0  # 14 s in a phase whose median is 7


def test_members_carry_their_label_and_label_values_are_escaped() -> None:
    s = feed(startup("weights"), PROBED)
    text = exposition([Exported('gpu "a"\\b\nc', s, member="node1")], 36010.0)
    assert 'server="gpu \\"a\\"\\\\b\\nc",member="node1"' in text
    assert escape('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    samples(text)
    assert exposition([], 0.0) == ""


def test_every_family_is_documented_and_readme_points_there() -> None:
    """README (at its 250-line cap) names the page that documents the metrics: examples/README.md's table."""
    assert "metrics: examples/README.md" in (ROOT / "README.md").read_text()
    table = {row.split("|")[1].strip().strip("`") for row in (ROOT / "examples" / "README.md").read_text().splitlines()
             if row.startswith("| `sglang_tui_")}  # fmt: skip
    assert table == {family.name for family in FAMILIES}
