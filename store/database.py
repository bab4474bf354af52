"""Engine creation from a `--database-url`, and schema creation at start."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from store.schema import metadata


def async_url(database_url: str) -> str:
    """`sqlite:///path` and `postgresql://...` as the contract spells them, with async drivers."""
    if database_url.startswith("sqlite:///"):
        return "sqlite+aiosqlite:///" + database_url.removeprefix("sqlite:///")
    if database_url.startswith(("postgresql://", "postgres://")):
        return "postgresql+asyncpg://" + database_url.split("://", 1)[1]
    return database_url


def create_engine(database_url: str) -> AsyncEngine:
    url = async_url(database_url)
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine.sync_engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record) -> None:  # noqa: ANN001
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()
            dbapi_connection.isolation_level = None  # we issue BEGIN ourselves, below

        @event.listens_for(engine.sync_engine, "begin")
        def _sqlite_begin(connection: Connection) -> None:
            # A write transaction takes the write lock at BEGIN and waits for it (busy_timeout).
            # A deferred one that reads first could not upgrade to writing once another
            # process has written: SQLite fails that at once with "database is locked".
            writes = connection.get_execution_options().get(WRITE_OPTION, False)
            connection.exec_driver_sql("BEGIN IMMEDIATE" if writes else "BEGIN")

        return engine
    return create_async_engine(url, pool_size=10, max_overflow=20)


WRITE_OPTION = "durable_responses_write"


@asynccontextmanager
async def write_transaction(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A transaction that writes: committed at the end, rolled back on error."""
    async with engine.connect() as connection:
        connection = await connection.execution_options(**{WRITE_OPTION: True})
        async with connection.begin():
            yield connection


async def create_schema(engine: AsyncEngine) -> None:
    async with write_transaction(engine) as connection:
        await connection.run_sync(metadata.create_all)
