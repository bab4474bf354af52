"""`store/files.py` and the SQLite store's scans, in seconds: a file's bytes go in and come out
a part at a time; the parts of an upload that never made its row are swept once they are old
enough, and those of one still arriving are not; a scan runs off the event loop's thread, so
the loop goes on while it works (a read on the loop's thread stops it: the measure can fail)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from models.quotas import ProjectQuotas
from store.database import Database
from store.files import ORPHAN_SECONDS, FileRow, Files

SLOW_QUERY = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000000) SELECT count(*) FROM n"


async def pieces(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def test_a_file_goes_in_and_comes_out_a_part_at_a_time(database: Database):
    files = Files(database)
    size = await files.write_parts("file_a", pieces(b"one ", b"two ", b"three"))
    await files.create(FileRow("file_a", "p", "a.txt", "assistants", size, 1), ProjectQuotas())
    assert [part async for part in files.parts("file_a")] == [b"one ", b"two ", b"three"]
    assert (await files.find("file_a")).bytes == 13


async def test_parts_without_a_file_are_swept_once_no_upload_can_still_be_writing_them(database: Database):
    files = Files(database)
    await files.write_parts("file_dead", pieces(b"x" * 10))
    await files.write_parts("file_kept", pieces(b"y"))
    await files.create(FileRow("file_kept", "p", "k.txt", "assistants", 1, 1), ProjectQuotas())
    assert await files.sweep_orphans() == 0  # an upload may still be arriving
    assert await files.sweep_orphans(now=time.time() + ORPHAN_SECONDS + 1) == 1
    assert [part async for part in files.parts("file_dead")] == []
    assert [part async for part in files.parts("file_kept")] == [b"y"]


async def ticks_while(work) -> int:  # noqa: ANN001
    """How often the event loop woke a 10 ms sleeper while `work` ran."""
    ticks = 0
    done = asyncio.Event()

    async def ticking() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(ticking())
    await asyncio.sleep(0)
    began = time.perf_counter()
    try:
        await work()
    finally:
        done.set()
        await ticker
    took = time.perf_counter() - began
    assert took > 0.1, f"the query was too quick ({took:.3f} s) to tell"
    return ticks


async def test_a_scan_leaves_the_event_loop_free(database: Database):
    async def scanned() -> None:
        async with database.scan() as transaction:
            await transaction.value(SLOW_QUERY)

    async def read() -> None:
        async with database.read() as transaction:
            await transaction.value(SLOW_QUERY)

    assert await ticks_while(read) <= 1  # on the loop's thread: nothing else runs meanwhile
    assert await ticks_while(scanned) >= 5


async def test_a_copy_stops_at_its_most_whatever_the_source_does(database: Database):
    """Issue 60 (H5): a file that grows as it is copied (here: without end) costs its most, and
    leaves no part behind."""
    import pytest

    from store.files import TooManyBytes

    async def endless() -> AsyncIterator[bytes]:
        while True:
            yield b"z" * 1024

    files = Files(database)
    with pytest.raises(TooManyBytes):
        await files.write_parts("file_growing", endless(), most=64 * 1024)
    assert [part async for part in files.parts("file_growing")] == []
    assert await files.write_parts("file_fits", pieces(b"z" * 1024), most=1024) == 1024
