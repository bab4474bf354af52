"""Opening a SQLite store waits its turn: a process that finds another holding the new store's
lock (switching it to WAL, migrating it) waits for it to let go, rather than failing after a
second, as one of four processes starting together on a loaded machine did."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from store.database import SqliteDatabase


async def test_a_store_whose_lock_another_holds_for_seconds_opens_once_it_is_let_go(tmp_path: Path):
    path = tmp_path / "responses.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("CREATE TABLE taken (x)")
    letting_go = threading.Timer(2.0, lambda: holder.execute("COMMIT"))
    letting_go.start()
    started = time.monotonic()
    try:
        database = SqliteDatabase(str(path))
    finally:
        letting_go.join()
    assert time.monotonic() - started >= 1.5, "the lock was let go before the store was opened: nothing was tested"
    await database.close()
    holder.close()
