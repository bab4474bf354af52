"""The database under the store: SQLAlchemy Core statements, run the cheapest way each
engine allows, behind one small interface (`read()` and `write()` transactions whose
`execute` returns SQLAlchemy results).

- **SQLite** runs in the event loop itself, on two synchronous connections (one that reads,
  one that writes). A statement on a local file in WAL mode takes microseconds; a hop to a
  thread (aiosqlite) under SQLAlchemy's async adapter costs about a millisecond of CPU per
  operation, which was a quarter of a response's Python time. The loop never waits on a
  lock held by another process: the writing connection has no busy timeout, and a busy
  database is retried with `asyncio.sleep`. Writers in this process queue on an asyncio
  lock. Checkpoints, SQLite's only fsyncs in WAL mode with `synchronous=NORMAL`, run in a
  thread. Database files are created readable by their owner only.
- **PostgreSQL** uses SQLAlchemy's async engine over asyncpg.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import Connection, create_engine, event
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine
from sqlalchemy.sql import Executable

from store.schema import metadata

log = logging.getLogger(__name__)

BUSY_WAIT_SECONDS = 30.0
"""How long a write waits for another process to release SQLite's write lock."""
CHECKPOINT_SECONDS = 1.0


class Transaction(Protocol):
    async def execute(self, statement: Executable, parameters: Any = None) -> CursorResult: ...


class Database(Protocol):
    dialect: str

    def read(self) -> contextlib.AbstractAsyncContextManager[Transaction]: ...

    def write(self) -> contextlib.AbstractAsyncContextManager[Transaction]: ...

    async def create_schema(self) -> None: ...

    async def close(self) -> None: ...


def open_database(database_url: str) -> Database:
    """`sqlite:///path` or `postgresql://...`, as the contract spells them."""
    if database_url.startswith("sqlite:///"):
        return SqliteDatabase(database_url.removeprefix("sqlite:///"))
    if database_url.startswith(("postgresql://", "postgres://")):
        return PostgresDatabase("postgresql+asyncpg://" + database_url.split("://", 1)[1])
    raise ValueError(f"unsupported database URL {database_url!r}: use sqlite:///path or postgresql://...")


# ---- SQLite ------------------------------------------------------------------------------


class _SyncTransaction:
    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    async def execute(self, statement: Executable, parameters: Any = None) -> CursorResult:
        return self._connection.execute(statement, parameters)


def _is_busy(error: OperationalError) -> bool:
    return isinstance(error.orig, sqlite3.OperationalError) and "locked" in str(error.orig)


class SqliteDatabase:
    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():  # owner-only from the start; -wal and -shm files follow it
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        self._engine = create_engine(f"sqlite:///{self.path}", pool_size=2, max_overflow=0)
        event.listen(self._engine, "connect", _configure_sqlite)
        event.listen(self._engine, "begin", _begin_sqlite)
        self._reader = self._engine.connect()
        self._writer = self._engine.connect()
        self._writer.info["writes"] = True
        self._reading = asyncio.Lock()
        self._writing = asyncio.Lock()
        self._checkpointer: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[Transaction]:
        async with self._reading:
            with self._reader.begin():
                yield _SyncTransaction(self._reader)

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[Transaction]:
        async with self._writing:
            transaction = await self._begin_immediate()
            try:
                yield _SyncTransaction(self._writer)
            except BaseException:
                transaction.rollback()
                raise
            transaction.commit()
            self._checkpoint_soon()

    async def _begin_immediate(self):  # noqa: ANN202 - a SQLAlchemy RootTransaction
        """Take the write lock without blocking the loop: retry while another process holds it."""
        deadline = time.monotonic() + BUSY_WAIT_SECONDS
        pause = 0.001
        while True:
            try:
                return self._writer.begin()
            except OperationalError as error:
                if not _is_busy(error) or time.monotonic() > deadline:
                    raise
                with contextlib.suppress(Exception):
                    self._writer.rollback()
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _checkpoint_soon(self) -> None:
        if self._checkpointer is None or self._checkpointer.done():
            self._checkpointer = asyncio.get_running_loop().create_task(self._checkpoint_later())

    async def _checkpoint_later(self) -> None:
        await asyncio.sleep(CHECKPOINT_SECONDS)
        try:
            await asyncio.to_thread(_checkpoint, self.path)
        except sqlite3.Error as error:  # the next one tries again
            log.warning("SQLite checkpoint failed: %s", error)

    async def create_schema(self) -> None:
        async with self.write():
            metadata.create_all(self._writer)

    async def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.cancel()
        self._reader.close()
        self._writer.close()
        self._engine.dispose()
        await asyncio.to_thread(_checkpoint, self.path)


def _configure_sqlite(dbapi_connection: sqlite3.Connection, _record: object) -> None:
    dbapi_connection.isolation_level = None  # transactions are begun by `_begin_sqlite`
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=0", "wal_autocheckpoint=0"):
        dbapi_connection.execute(f"PRAGMA {pragma}")


def _begin_sqlite(connection: Connection) -> None:
    # A writer takes the write lock at BEGIN. A deferred transaction that read first could not
    # upgrade to writing once another process has written: SQLite fails that at once.
    connection.exec_driver_sql("BEGIN IMMEDIATE" if connection.info.get("writes") else "BEGIN")


def _checkpoint(path: Path) -> None:
    """Copy the WAL into the database file (PASSIVE: waits for no reader or writer)."""
    connection = sqlite3.connect(path, timeout=1)
    try:
        connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
    finally:
        connection.close()


# ---- PostgreSQL --------------------------------------------------------------------------


class _AsyncTransaction:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def execute(self, statement: Executable, parameters: Any = None) -> CursorResult:
        return await self._connection.execute(statement, parameters)


class PostgresDatabase:
    dialect = "postgresql"

    def __init__(self, url: str) -> None:
        self._engine = create_async_engine(url, pool_size=10, max_overflow=20)

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[Transaction]:
        async with self._engine.connect() as connection, connection.begin():
            yield _AsyncTransaction(connection)

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[Transaction]:
        async with self._engine.begin() as connection:
            yield _AsyncTransaction(connection)

    async def create_schema(self) -> None:
        async with self._engine.begin() as connection:
            await connection.run_sync(metadata.create_all)

    async def close(self) -> None:
        await self._engine.dispose()
