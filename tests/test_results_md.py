"""bench/RESULTS.md is what bench/bench_all.py writes: every section carries the commit and the date it was measured,
belongs to a script of the registry (or is a recorded GPU check), and rewriting one section carries the others over
byte for byte. Every benchmark script is in the registry, so none of its figures can be written by hand alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.results import BENCHES, PREAMBLE, RECORDED, ResultsError, parse, render, replace, stamp_of, stamped

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"


def sections() -> dict[str, str]:
    return parse(RESULTS.read_text())[1]


def test_results_is_in_the_shape_bench_all_writes() -> None:
    text = RESULTS.read_text()
    preamble, found = parse(text)
    assert preamble.strip() == PREAMBLE.strip(), "edit the preamble in bench/results.py, not in RESULTS.md"
    assert render(found) == text  # a rewrite of any section leaves the rest of the file as it is


def test_every_section_is_stamped_with_its_commit_and_date() -> None:
    found = sections()
    assert len(found) >= 10
    for name, body in found.items():
        stamp = stamp_of(body)
        assert stamp is not None, f"section {name}: no `_Measured … DATE … commit REV_` line under its title"
        if name in RECORDED:
            assert stamp.group(1) == "Recorded", f"{name} ran on a GPU machine: bench_all cannot have measured it"


def test_every_section_belongs_to_a_script_or_is_a_recorded_gpu_check() -> None:
    known = {b.name for b in BENCHES} | set(RECORDED)
    assert set(sections()) <= known, set(sections()) - known
    assert set(RECORDED) <= set(sections()), "a recorded GPU check is kept, never dropped"


def test_every_benchmark_script_is_in_the_registry_and_every_entry_exists() -> None:
    scripts = {p.name for p in (ROOT / "bench").glob("bench_*.py")} - {"bench_all.py", "bench_common.py"}
    registered = {b.script for b in BENCHES}
    assert scripts | {"reliability_table.py"} == registered, scripts ^ registered
    assert len({b.name for b in BENCHES}) == len(BENCHES)
    assert all((ROOT / path).is_file() for path in RECORDED.values())


def test_rewriting_one_section_keeps_every_other_byte_for_byte() -> None:
    text = RESULTS.read_text()
    before = parse(text)[1]
    fresh = stamped(
        "### Seeing an event\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        "_Measured 2031-01-02 03:04 UTC at commit abcdef0+dirty._",
    )
    after = parse(replace(text, {"event_latency": fresh}))[1]
    assert after["event_latency"] == fresh.strip("\n")
    assert list(after) == list(before)  # in place, not moved
    assert {k: v for k, v in after.items() if k != "event_latency"} == {
        k: v for k, v in before.items() if k != "event_latency"
    }
    stamp = stamp_of(after["event_latency"])
    assert stamp is not None and stamp.groups() == ("Measured", "2031-01-02", "abcdef0+dirty")


def test_a_new_section_is_added_and_a_first_file_written_whole() -> None:
    body = stamped("### Wait\n\nrows\n", "_Measured 2031-01-02 00:00 UTC at commit 1234567._")
    assert list(parse(replace(RESULTS.read_text(), {"wait_latency": body}))[1])[-1] == "wait_latency"
    preamble, found = parse(replace("", {"stop": body}))
    assert preamble.strip() == PREAMBLE.strip() and list(found) == ["stop"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("<!-- results:begin stop -->\n### Stop\n", "no end marker"),
        ("<!-- results:begin stop -->\nx\n<!-- results:end stop -->\nstray\n", "after the last section"),
        ("<!-- results:begin a -->\nx\n<!-- results:end a -->\n<!-- results:begin a -->\ny\n<!-- results:end a -->\n",
         "twice"),
    ],
)  # fmt: skip
def test_a_file_in_another_shape_is_refused_with_the_reason(text: str, said: str) -> None:
    with pytest.raises(ResultsError, match=said):
        parse(text)


def test_a_section_without_a_stamp_is_seen() -> None:
    assert stamp_of("### Stop\n\n| a |\n") is None
    assert stamp_of("### Stop\n\n_Measured somewhere, some day._\n") is None
