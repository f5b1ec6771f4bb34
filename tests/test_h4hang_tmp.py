import asyncio
from pathlib import Path
from tui.sources.local import LocalHost
from tui.sources.logtail import LogTail
from tests.test_logtail import Collector

async def test_hang(tmp_path: Path):
    h = LocalHost(); await h.connect()
    log = tmp_path / "x.log"; log.write_bytes(b"a\n")
    c = Collector(LogTail(h, str(log)))
    await c.until(lambda: c.tail.offset == 2)
    await h.close()
    assert False
