"""End to end over ../shared/real-logs, ../shared/real-logs-2 and tests/data/real-logs-own: `replay --json` of each
real SGLang log matches its expected.json entry. The second set (and the own, read alike) adds `phase_alternatives` (a second reading of the last phase the text allows)
and gives `tp_size` only where the text states it (null there is "not stated", not checked)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.conftest import SHARED
from tests.helpers.processes import Cli

SETS = ("real-logs", "real-logs-2", "real-logs-own")
# this project's own measure: excerpts from public threads outside the shared sets (their README), read like the second
OWN = Path(__file__).resolve().parent / "data" / "real-logs-own"


def _folder(name: str) -> Path:
    return OWN if name == "real-logs-own" else SHARED / name


def _names() -> list[str]:
    """`set/file` for parametrization, read where the fixtures look (a placeholder per set when absent)."""
    out: list[str] = []
    for name in SETS:
        expected = _folder(name) / "expected.json"
        if not expected.is_file():
            out.append(f"{name}/(absent)")
            continue
        out += [f"{name}/{entry['file']}" for entry in json.loads(expected.read_text())]
    return out


@pytest.mark.parametrize("name", _names())
def test_real_log_matches_expected(
    real_logs_dir: Path | None, real_logs_2_dir: Path | None, name: str, cli: Cli
) -> None:
    set_name, _, file = name.partition("/")
    folder = {"real-logs": real_logs_dir, "real-logs-2": real_logs_2_dir, "real-logs-own": OWN}[set_name]
    if folder is None:
        pytest.skip(f"../shared/{set_name} is not present on this machine")
    entries = {str(e["file"]): e for e in json.loads((folder / "expected.json").read_text())}
    entry = entries[file]
    proc = cli("replay", folder / file, "--json", timeout=60)
    assert proc.returncode == 0, f"{name}: {proc.stderr}"
    got = json.loads(proc.stdout)
    stated_tp_only = set_name != "real-logs"
    mismatches = [f"{field}: {problem}" for field, problem in _compare(got, entry["expect"], stated_tp_only)]
    assert not mismatches, f"{name}:\n" + "\n".join(mismatches)


def _compare(
    got: Mapping[str, object], expect: Mapping[str, object], stated_tp_only: bool = False
) -> list[tuple[str, str]]:
    """(field, problem) per mismatch. `stated_tp_only`: tp_size is checked only where the entry gives a number."""
    out: list[tuple[str, str]] = []
    phases = [expect["phase"], *(expect.get("phase_alternatives") or [])]  # type: ignore[misc]
    if got["phase"] not in phases:
        out.append(("phase", f"got {got['phase']!r}, expected one of {phases!r}"))
    for key in ("shards", "tp_size", "speculative"):
        if key == "tp_size" and stated_tp_only and expect[key] is None:
            continue
        if got[key] != expect[key]:
            out.append((key, f"got {got[key]!r}, expected {expect[key]!r}"))
    error = got["error"] if isinstance(got["error"], dict) else None
    kind = error["kind"] if error else None
    if kind != expect["error_kind"]:
        out.append(("error.kind", f"got {kind!r}, expected {expect['error_kind']!r}"))
    want_line = expect["error_line"]
    line = str(error["line"]) if error else None
    # expected.json quotes the cause; the log line may carry a wrapper prefix or run on past the quote. Where the
    # cause is cut off, error_line_alternatives lists the other lines a careful reader may quote.
    wanted = [str(want_line)] + [str(a) for a in expect.get("error_line_alternatives") or []]  # type: ignore[attr-defined]
    if (want_line is None) != (line is None) or (want_line is not None and not any(w in str(line) for w in wanted)):
        out.append(("error.line", f"got {line!r}, expected it to contain {want_line!r}"))
    decode = got["decode"] if isinstance(got["decode"], dict) else {}
    for key in ("accept_len", "gen_throughput"):
        value, want = decode.get(key), expect[key]
        if (value is None) != (want is None) or (want is not None and abs(float(value) - float(want)) > 1e-6):  # type: ignore[arg-type]
            out.append((key, f"got {value!r}, expected {want!r}"))
    return out


def test_the_comparison_catches_a_mismatch() -> None:
    """The checker itself can fail: a wrong phase and a wrong line are reported."""
    got = {
        "phase": "ready",
        "shards": None,
        "tp_size": None,
        "speculative": None,
        "error": {"kind": "oom", "line": "x"},
        "decode": None,
    }
    expect = {
        "phase": "failed",
        "shards": None,
        "tp_size": None,
        "speculative": None,
        "error_kind": "oom",
        "error_line": "CUDA out of memory",
        "accept_len": None,
        "gen_throughput": None,
    }
    assert [field for field, _ in _compare(got, expect)] == ["phase", "error.line"]


def test_the_comparison_accepts_an_alternative_line_and_only_those() -> None:
    got = {
        "phase": "failed",
        "shards": None,
        "tp_size": None,
        "speculative": None,
        "error": {"kind": "exception", "line": "[t TP2] Scheduler hit an exception"},
        "decode": None,
    }
    expect = {
        "phase": "failed",
        "shards": None,
        "tp_size": None,
        "speculative": None,
        "error_kind": "exception",
        "error_line": "Received sigquit",
        "error_line_alternatives": ["Scheduler hit an exception"],
        "accept_len": None,
        "gen_throughput": None,
    }
    assert _compare(got, expect) == []
    expect["error_line_alternatives"] = ["Killed"]
    assert [field for field, _ in _compare(got, expect)] == ["error.line"]


def test_the_comparison_reads_the_second_sets_rules() -> None:
    """A phase alternative is right; tp_size null in the second set is not checked, a number is."""
    got = {"phase": "cuda_graph", "shards": None, "tp_size": 8, "speculative": None, "error": None, "decode": None}
    expect: dict[str, object] = {
        "phase": "kv_cache",
        "phase_alternatives": ["cuda_graph"],
        "shards": None,
        "tp_size": None,
        "speculative": None,
        "error_kind": None,
        "error_line": None,
        "accept_len": None,
        "gen_throughput": None,
    }
    assert _compare(got, expect, stated_tp_only=True) == []
    assert [field for field, _ in _compare(got, expect)] == ["tp_size"]
    expect["tp_size"] = 4
    assert [field for field, _ in _compare(got, expect, stated_tp_only=True)] == ["tp_size"]
    expect["phase_alternatives"] = []
    assert [field for field, _ in _compare(got, expect, stated_tp_only=True)] == ["phase", "tp_size"]
