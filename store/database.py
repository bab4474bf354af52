"""Engine creation from a `--database-url`, and schema creation at start."""

from __future__ import annotations

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

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

        return engine
    return create_async_engine(url, pool_size=10, max_overflow=20)


async def create_schema(engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        await connection.run_sync(metadata.create_all)
