"""The probe's memo (tui.core.probe_memo): what one call hands the next, never trusted. Pure: bytes in and
out, no file and no process."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

from tests.test_readiness_phases import feed, startup
from tui.core.logparse import LogParser
from tui.core.probe_memo import FoundServer, LogMark, ProbeMemo, decode, encode
from tui.core.readiness import reduce
from tui.core.state import Readiness

KEY = "local\x0030000\x00/var/log/sglang.log"


def a_memo() -> ProbeMemo:
    parser = LogParser()
    parser.feed(b"[2026-12-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2)\n[2026-12-01 10:00:01] Load")
    state = feed(startup("weights"), Readiness.of(health_probed=True))
    found = FoundServer(main=7, group=7, session=7, run_id=None, known=((7, 123),), names=((7, "python3 -m sglang"),))
    return ProbeMemo(KEY, state, parser, LogMark("2049", "1234", 4096, b"tail bytes"), found, 36010.0)


def test_a_memo_comes_back_as_it_was_and_its_parser_goes_on_where_it_stopped() -> None:
    memo = a_memo()
    back = decode(encode(memo, "1.2.3"), "1.2.3", KEY)
    assert isinstance(back, ProbeMemo)
    assert back.state == memo.state and back.mark == memo.mark and back.found == memo.found
    rest = b"ing weights begin.\n"
    assert back.parser is not None and memo.parser is not None
    assert back.parser.feed(rest) == memo.parser.feed(rest)  # the partial line carried over


def test_another_version_key_or_format_is_rebuilt() -> None:
    data = encode(a_memo(), "1.2.3")
    assert decode(data, "1.2.4", KEY) == "written by another version"
    assert decode(data, "1.2.3", "local\x0030001\x00/var/log/sglang.log") == "written for another server"
    assert decode(b"", "1.2.3", KEY) == "not a probe memo"
    assert decode(b"something else\n" + data, "1.2.3", KEY) == "not a probe memo"


def test_a_torn_or_edited_payload_fails_its_checksum() -> None:
    data = encode(a_memo(), "1.2.3")
    assert decode(data[:-10], "1.2.3", KEY) == "checksum mismatch (a torn or edited file)"
    flipped = bytearray(data)
    flipped[-20] ^= 0xFF
    assert decode(bytes(flipped), "1.2.3", KEY) == "checksum mismatch (a torn or edited file)"


class _Runs:
    """A payload that would run a command when unpickled by a plain pickle.loads."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def forged(payload: bytes) -> bytes:
    """A memo file around any payload, with a valid header and checksum: what an attacker who can write the
    file (or a bug) could leave."""
    import hashlib

    from tui.core.probe_memo import FORMAT, MAGIC, schema

    head = b" ".join(
        (MAGIC, str(FORMAT).encode(), b"1.2.3", schema().encode(), hashlib.sha256(payload).hexdigest().encode())
    )
    return head + b"\n" + payload


def test_a_forged_payload_with_a_valid_checksum_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "forged"
    found = decode(forged(pickle.dumps(_Runs(marker))), "1.2.3", KEY)
    assert isinstance(found, str) and found.startswith("unreadable (UnpicklingError")
    assert not marker.exists()


def test_a_payload_of_the_wrong_shape_is_refused() -> None:
    memo = a_memo()
    memo.state = "not a state"  # type: ignore[assignment]
    assert decode(forged(pickle.dumps(memo)), "1.2.3", KEY) == "not a probe memo"
    assert decode(forged(pickle.dumps(reduce(Readiness(), startup()[0], 1.0))), "1.2.3", KEY) == "not a probe memo"


def test_the_mark_knows_its_file() -> None:
    mark = LogMark("2049", "1234", 100, b"abc")
    assert mark.same_file("2049", "1234", 100, b"abc")
    assert mark.same_file("2049", "1234", 5000, None)  # grew; the bytes before could not be read
    assert not mark.same_file("2049", "1235", 5000, b"abc")  # rotated: another inode
    assert not mark.same_file("2049", "1234", 99, b"abc")  # truncated
    assert not mark.same_file("2049", "1234", 5000, b"xyz")  # rewritten in place past our offset
