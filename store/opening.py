"""A store opened from its URL, as the contract spells it (`DATABASE_URL`): SQLite
(`store/database.py`) or PostgreSQL (`store/postgres.py`)."""

from __future__ import annotations

from store.database import Database, SqliteDatabase


def open_database(database_url: str, *, pool_size: int = 10) -> Database:
    """`sqlite:///path` or `postgresql://...` (libpq's URL, `sslmode` included), as the
    contract spells them; `pool_size` bounds a PostgreSQL store's connections per process."""
    if database_url.startswith("sqlite:///"):
        return SqliteDatabase(database_url.removeprefix("sqlite:///"))
    if database_url.startswith(("postgresql://", "postgres://")):
        from store.postgres import PostgresDatabase  # asyncpg is imported only by a PostgreSQL store

        return PostgresDatabase(database_url, pool_size=pool_size)
    raise ValueError(f"unsupported database URL {database_url!r}: use sqlite:///path or postgresql://...")
