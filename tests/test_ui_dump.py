"""The `d` key (issue 13): the dump intent runs in a worker, read-only too, and its notice names the odd rank
and the file. The dump itself is a fake here (the real one runs py-spy on the host: tests/test_dump.py)."""

from __future__ import annotations

import asyncio

from tests.helpers.ui_fakes import HOST, FakeBatchSource, FakeClock, until
from tui.ui.app import SglangTui, UiSources

SIZE = (140, 40)


def _app(dump, read_only: bool = False) -> SglangTui:
    source = FakeBatchSource()
    sources = UiSources(batches=source.batches, host_label=HOST, port=30000, dump=dump)
    return SglangTui(sources, read_only=read_only, clock=FakeClock())


async def _notices(app: SglangTui, pilot, needle: str) -> list[str]:
    def found() -> list[str]:
        return [str(n.message) for n in app._notifications if needle in str(n.message)]

    await until(pilot, found, what=f"a notice with {needle!r}")
    return found()


async def test_d_dumps_and_names_the_file_even_read_only() -> None:
    calls: list[int] = []

    async def dump() -> tuple[str, str | None]:
        calls.append(1)
        await asyncio.sleep(0)
        return "TP3 is in all_reduce; TP0–2, TP4–7 are in barrier", "/tmp/dump-x.txt"

    app = _app(dump, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        found = await _notices(app, pilot, "saved to /tmp/dump-x.txt")
        assert calls == [1]
        assert found and "TP3 is in all_reduce" in found[0]


async def test_a_failed_dump_is_one_notice_not_a_crash() -> None:
    async def dump() -> tuple[str, str | None]:
        return "py-spy is not installed on gpu1 (looked next to python3 and on PATH): install it", None

    app = _app(dump)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        assert await _notices(app, pilot, "py-spy is not installed")
        assert app.is_running
