"""End to end over ../shared/real-logs: `replay --json` of each real SGLang log matches its expected.json entry."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.conftest import SHARED
from tests.helpers.processes import Cli


def _names() -> list[str]:
    """File names for parametrization, read where the real_logs_dir fixture looks (none when absent)."""
    expected = SHARED / "real-logs" / "expected.json"
    if not expected.is_file():
        return ["(real-logs absent)"]
    return [str(entry["file"]) for entry in json.loads(expected.read_text())]


@pytest.mark.parametrize("name", _names())
def test_real_log_matches_expected(real_logs_dir: Path | None, name: str, cli: Cli) -> None:
    if real_logs_dir is None:
        pytest.skip("../shared/real-logs is not present on this machine")
    entries = {str(e["file"]): e for e in json.loads((real_logs_dir / "expected.json").read_text())}
    entry = entries[name]
    proc = cli("replay", real_logs_dir / name, "--json", timeout=60)
    assert proc.returncode == 0, f"{name}: {proc.stderr}"
    got = json.loads(proc.stdout)
    mismatches = [f"{field}: {problem}" for field, problem in _compare(got, entry["expect"])]
    assert not mismatches, f"{name}:\n" + "\n".join(mismatches)


def _compare(got: Mapping[str, object], expect: Mapping[str, object]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key in ("phase", "shards", "tp_size", "speculative"):
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
