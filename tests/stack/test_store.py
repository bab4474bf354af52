"""The SQLite store's own promises: files only its owner can read, a write that waits for
another process's lock without stalling the event loop, list parameters, and a WAL that
stays bounded under writes that never pause."""

from __future__ import annotations

import asyncio
import sqlite3
import stat
import threading
import time
from pathlib import Path

from store.database import WAL_TRUNCATE_BYTES, SqliteDatabase, _checkpoint


async def _opened(path: Path) -> SqliteDatabase:
    db = SqliteDatabase(str(path))
    await db.migrate()
    return db


async def test_database_files_are_readable_by_their_owner_only(tmp_path: Path):
    db = await _opened(tmp_path / "responses.db")
    async with db.write() as transaction:
        await transaction.run("INSERT INTO cancel_requests (response_id, requested_at) VALUES ('r', 1)")
    try:
        for name in ("responses.db", "responses.db-wal", "responses.db-shm"):
            mode = stat.S_IMODE((tmp_path / name).stat().st_mode)
            assert mode & 0o077 == 0, f"{name} is {oct(mode)}"
    finally:
        await db.close()


async def test_a_write_waits_for_another_process_lock_without_stalling_the_loop(tmp_path: Path):
    db = await _opened(tmp_path / "responses.db")
    other = sqlite3.connect(tmp_path / "responses.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    gaps: list[float] = []

    async def ticking() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(ticking())
    started = time.monotonic()
    release.start()
    try:
        async with db.write() as transaction:
            await transaction.run("INSERT INTO cancel_requests (response_id, requested_at) VALUES ('r', 1)")
        waited = time.monotonic() - started
    finally:
        ticker.cancel()
        release.join()
        other.close()
        await db.close()
    assert waited >= 0.45, "the write went ahead while another process held the lock"
    assert max(gaps) < 0.2, f"the event loop stalled for {max(gaps):.3f} s"


async def test_a_list_parameter_stands_for_its_values(tmp_path: Path):
    db = await _opened(tmp_path / "responses.db")
    try:
        async with db.write() as transaction:
            for name in ("a", "b", "c"):
                await transaction.run(
                    "INSERT INTO cancel_requests (response_id, requested_at) VALUES (:id, 1)", id=name
                )
        async with db.read() as transaction:
            some = await transaction.all(
                "SELECT response_id FROM cancel_requests WHERE response_id IN (:ids)", ids=["a", "c", "z"]
            )
            none = await transaction.all("SELECT response_id FROM cancel_requests WHERE response_id IN (:ids)", ids=[])
        assert sorted(row["response_id"] for row in some) == ["a", "c"] and none == []
    finally:
        await db.close()


async def test_the_wal_is_emptied_once_it_grows_past_its_bound(tmp_path: Path):
    path = tmp_path / "responses.db"
    db = await _opened(path)
    try:
        payload = "x" * (1024 * 1024)
        for index in range(WAL_TRUNCATE_BYTES // len(payload) + 8):
            async with db.write() as transaction:
                await transaction.run(
                    "INSERT INTO chat_contexts (response_id, messages) VALUES (:id, :data)",
                    id=f"r{index}",
                    data=payload,
                )
        wal = path.with_name("responses.db-wal")
        assert wal.stat().st_size > WAL_TRUNCATE_BYTES
        await asyncio.to_thread(_checkpoint, path)
        assert wal.stat().st_size == 0
    finally:
        await db.close()
