"""The database under the store: plain SQL with `:named` parameters, run straight on the
driver, behind one small interface (`read()` and `write()` transactions).

SQLAlchemy owns the schema (`store/schema.py`); the statements a response runs on its way
are SQL text in the subset SQLite and PostgreSQL share. Running them through SQLAlchemy's
async layer cost about a millisecond of CPU each (statement building, cache keys, greenlets,
a thread hop per call for SQLite), a quarter of a response's Python time; straight on the
driver a statement costs microseconds.

- **SQLite** runs in the event loop itself, on two synchronous `sqlite3` connections (one
  reads, one writes). A statement on a local file in WAL mode takes microseconds, less than
  handing it to a thread would. A read whose work grows with what a tenant stored (a vector
  search over every chunk of a store) is a `scan()`: it runs in a thread, on a third
  connection, so the loop goes on serving meanwhile. The loop never waits on a lock another process holds: the
  writing connection has no busy timeout, and a busy database is retried with
  `asyncio.sleep`. Writers in this process queue on an asyncio lock. Checkpoints, SQLite's
  only fsyncs in WAL mode with `synchronous=NORMAL`, run in a thread. Database files are
  created readable by their owner only.
- **PostgreSQL** runs on an asyncpg pool; `:name` parameters become `$n` (`store/postgres.py`).

A parameter whose value is a list stands for a comma-separated list (`IN (:ids)`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from store import vector_functions
from store.wakeups import LocalSocketWakeups, Wakeups

log = logging.getLogger(__name__)

BUSY_WAIT_SECONDS = 30.0
"""How long a write waits for another process to release SQLite's write lock."""
CHECKPOINT_SECONDS = 1.0
WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024
WAL_TRUNCATE_BYTES = 32 * 1024 * 1024

Row = Mapping[str, Any]


class Conflict(Exception):
    """A row with that key is there already (a unique or primary-key constraint held)."""


class Transaction(Protocol):
    async def all(self, query: str, **params: Any) -> list[Row]: ...

    async def one(self, query: str, **params: Any) -> Row | None: ...

    async def value(self, query: str, **params: Any) -> Any:
        """The first column of the first row, or None."""

    async def run(self, query: str, **params: Any) -> int:
        """Execute; returns how many rows it changed."""

    async def run_many(self, query: str, rows: Sequence[Mapping[str, Any]]) -> None: ...


class Database(Protocol):
    dialect: str

    def read(self) -> contextlib.AbstractAsyncContextManager[Transaction]: ...

    def scan(self) -> contextlib.AbstractAsyncContextManager[Transaction]:
        """A read that may take long: never on the event loop's thread."""

    def write(self) -> contextlib.AbstractAsyncContextManager[Transaction]: ...

    async def migrate(self) -> None:
        """Bring the schema to the newest version (`store/migrate.py`), taking turns with
        other processes doing the same."""

    def erase_deleted_soon(self) -> None:
        """Deleted rows held secrets: make sure their bytes leave the database's files soon."""

    @property
    def wakeups(self) -> Wakeups:
        """How the processes sharing this database wake each other (`store/wakeups.py`)."""

    async def close(self) -> None: ...


_NAMED = re.compile(r"(?<!:):([a-zA-Z_][a-zA-Z0-9_]*)")


def _expand_lists(query: str, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """`:ids` with a list value becomes `:ids_0, :ids_1, ...` (NULL for an empty list)."""
    lists = {name: value for name, value in params.items() if isinstance(value, (list, tuple, set, frozenset))}
    if not lists:
        return query, dict(params)
    flat = {name: value for name, value in params.items() if name not in lists}
    for name, values in lists.items():
        names = [f"{name}_{index}" for index in range(len(values))]
        flat.update(zip(names, values, strict=True))
        query = re.sub(rf"(?<!:):{name}\b", ", ".join(f":{each}" for each in names) or "NULL", query)
    return query, flat


# ---- SQLite ------------------------------------------------------------------------------


class _SqliteTransaction:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def _execute(self, query: str, params: Mapping[str, Any]) -> sqlite3.Cursor:
        query, flat = _expand_lists(query, params)
        try:
            return self._connection.execute(query, flat)
        except sqlite3.IntegrityError as error:
            raise Conflict(str(error)) from error

    async def all(self, query: str, **params: Any) -> list[Row]:
        return self._execute(query, params).fetchall()

    async def one(self, query: str, **params: Any) -> Row | None:
        row: Row | None = self._execute(query, params).fetchone()
        return row

    async def value(self, query: str, **params: Any) -> Any:
        row = self._execute(query, params).fetchone()
        return None if row is None else row[0]

    async def run(self, query: str, **params: Any) -> int:
        return self._execute(query, params).rowcount

    async def run_many(self, query: str, rows: Sequence[Mapping[str, Any]]) -> None:
        try:
            self._connection.executemany(query, rows)
        except sqlite3.IntegrityError as error:
            raise Conflict(str(error)) from error


class _ThreadedSqliteTransaction:
    """A transaction whose statements run in a worker thread (`SqliteDatabase.scan`)."""

    def __init__(self, inner: _SqliteTransaction) -> None:
        self._inner = inner

    async def all(self, query: str, **params: Any) -> list[Row]:
        rows: list[Row] = await asyncio.to_thread(lambda: self._inner._execute(query, params).fetchall())
        return rows

    async def one(self, query: str, **params: Any) -> Row | None:
        row: Row | None = await asyncio.to_thread(lambda: self._inner._execute(query, params).fetchone())
        return row

    async def value(self, query: str, **params: Any) -> Any:
        return await asyncio.to_thread(lambda: self._first(query, params))

    def _first(self, query: str, params: Mapping[str, Any]) -> Any:
        row = self._inner._execute(query, params).fetchone()
        return None if row is None else row[0]

    async def run(self, query: str, **params: Any) -> int:
        raise TypeError("a scan only reads")

    async def run_many(self, query: str, rows: Sequence[Mapping[str, Any]]) -> None:
        raise TypeError("a scan only reads")


def _is_busy(error: sqlite3.OperationalError) -> bool:
    return "locked" in str(error) or "busy" in str(error)


class SqliteDatabase:
    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():  # owner-only from the start; -wal and -shm files follow it
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        self._reader = self._connect(busy_timeout_ms=1000)
        self._writer = self._connect(busy_timeout_ms=0)
        self._scanner = self._connect(busy_timeout_ms=1000, threaded=True)
        self._reading = asyncio.Lock()
        self._scanning = asyncio.Lock()
        self._writing = asyncio.Lock()
        self._checkpointer: asyncio.Task[None] | None = None
        self._truncate_next = False
        self.wakeups: Wakeups = LocalSocketWakeups(Path(f"{self.path}.wakeups"))

    def _connect(self, *, busy_timeout_ms: int, threaded: bool = False) -> sqlite3.Connection:
        # Opening waits as long as a write would: processes starting together on a new store
        # take turns at switching it to WAL (a second's wait failed one on a loaded machine).
        connection = sqlite3.connect(
            self.path, isolation_level=None, timeout=BUSY_WAIT_SECONDS, check_same_thread=not threaded
        )
        connection.row_factory = sqlite3.Row
        # The WAL is checkpointed in a thread (`_checkpoint`); after the log restarts, SQLite
        # cuts the file back to `journal_size_limit` rather than keeping its largest size.
        # `secure_delete`: a deleted row's bytes are overwritten with zeros, not left in free pages.
        # The connection's own wait is set last, once the store is open.
        for pragma in (
            "journal_mode=WAL",
            "synchronous=NORMAL",
            "wal_autocheckpoint=0",
            f"journal_size_limit={WAL_SIZE_LIMIT_BYTES}",
            "secure_delete=ON",
            f"busy_timeout={busy_timeout_ms}",
        ):
            connection.execute(f"PRAGMA {pragma}")
        self.vector_functions = vector_functions.install(connection)
        return connection

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[Transaction]:
        async with self._reading:
            self._reader.execute("BEGIN")
            try:
                yield _SqliteTransaction(self._reader)
            finally:
                self._reader.execute("COMMIT")

    @contextlib.asynccontextmanager
    async def scan(self) -> AsyncIterator[Transaction]:
        async with self._scanning:
            await asyncio.to_thread(self._scanner.execute, "BEGIN")
            try:
                yield _ThreadedSqliteTransaction(_SqliteTransaction(self._scanner))
            finally:
                await asyncio.shield(asyncio.to_thread(self._scanner.execute, "COMMIT"))

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[Transaction]:
        async with self._writing:
            await self._begin_immediate()
            try:
                yield _SqliteTransaction(self._writer)
            except BaseException:
                self._writer.execute("ROLLBACK")
                raise
            self._writer.execute("COMMIT")
            self._checkpoint_soon()

    async def _begin_immediate(self) -> None:
        """Take the write lock without blocking the loop: retry while another process holds it."""
        deadline = time.monotonic() + BUSY_WAIT_SECONDS
        pause = 0.001
        while True:
            try:
                self._writer.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as error:
                if not _is_busy(error) or time.monotonic() > deadline:
                    raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _checkpoint_soon(self) -> None:
        if self._checkpointer is None or self._checkpointer.done():
            self._checkpointer = asyncio.get_running_loop().create_task(self._checkpoint_later())

    def erase_deleted_soon(self) -> None:
        """`secure_delete` zeroes a deleted row in the database file, but the WAL still holds
        the pages it was written in: the next checkpoint (within a second) truncates the WAL."""
        self._truncate_next = True
        self._checkpoint_soon()

    async def _checkpoint_later(self) -> None:
        """Checkpoint a second from now; a truncation asked for is tried again every second
        until it succeeds (readers in other connections can hold the log at that instant),
        whether or not anything else is written meanwhile."""
        while True:
            await asyncio.sleep(CHECKPOINT_SECONDS)
            truncate, self._truncate_next = self._truncate_next, False
            try:
                if await asyncio.to_thread(_checkpoint, self.path, truncate):
                    return
                self._truncate_next = True  # readers held it: again in a second
            except sqlite3.Error as error:  # the next write schedules the next one
                self._truncate_next = self._truncate_next or truncate
                log.warning("SQLite checkpoint failed: %s", error)
                return

    async def migrate(self) -> None:
        from store.migrate import upgrade_sqlite  # Alembic costs 0.2 s to import: only where it is used

        upgrade_sqlite(self.path)

    async def close(self) -> None:
        await self.wakeups.close()
        if self._checkpointer is not None:
            self._checkpointer.cancel()
        self._reader.close()
        self._writer.close()
        self._scanner.close()
        await asyncio.to_thread(_checkpoint, self.path, True)


def _checkpoint(path: Path, truncate: bool = False) -> bool:
    """Copy the WAL into the database file. PASSIVE waits for nobody, but while writes go on
    the log never restarts; once the file has grown past `WAL_TRUNCATE_BYTES`, a TRUNCATE
    checkpoint (PASSIVE has copied most frames already) takes the write lock for a moment and
    empties it; so does one asked for (`truncate`: deleted secrets must leave the log). Writers
    in the loop meanwhile find the database busy and retry. False when a TRUNCATE could not
    finish (readers held the log)."""
    connection = sqlite3.connect(path, timeout=2)
    try:
        connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        wal = path.with_name(path.name + "-wal")
        if truncate or (wal.exists() and wal.stat().st_size > WAL_TRUNCATE_BYTES):
            busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            return bool(busy == 0)
        return True
    finally:
        connection.close()
