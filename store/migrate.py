"""Bringing a store's schema to the newest version (`store/migrations`, Alembic), at the start
of every process that opens the store.

Processes that start together take turns: on PostgreSQL the upgrade runs in one transaction
that first takes an advisory lock (DDL is transactional there, so a process that fails
half-way leaves nothing); on SQLite in one `BEGIN IMMEDIATE` transaction, which holds the
database's write lock. Whoever comes second finds the schema current and changes nothing.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

logging.getLogger("alembic").setLevel(logging.WARNING)  # before its import: one line of our own says what happened

from alembic import command  # noqa: E402
from alembic.config import Config  # noqa: E402
from alembic.runtime.migration import MigrationContext  # noqa: E402
from alembic.script import ScriptDirectory  # noqa: E402
from sqlalchemy import Connection, create_engine, event, text  # noqa: E402

from models.errors import SchemaTooNewError  # noqa: E402

log = logging.getLogger(__name__)

SCHEMA_LOCK_KEY = 0x6475726162_6C65
"""'durable': the PostgreSQL advisory lock under which schema changes run."""
SQLITE_LOCK_WAIT_SECONDS = 60.0
"""How long a starting process waits for another's upgrade to release SQLite's write lock."""


def _config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config(None)).get_current_head()  # type: ignore[arg-type]
    assert head is not None
    return head


def current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def upgrade(connection: Connection) -> None:
    """Apply pending migrations on `connection`, inside the transaction it is in (which holds
    the schema lock). A store made before migrations is adopted by the first one."""
    config = _config(connection)
    before = current_revision(connection)
    known = {script.revision for script in ScriptDirectory.from_config(config).walk_revisions()}
    if before is not None and before not in known:
        raise SchemaTooNewError(
            f"the database's schema is at revision {before}, which this version of durable-responses does not "
            f"know (its newest is {head_revision()}): run the newer version, or restore the database"
        )
    command.upgrade(config, "head")
    after = current_revision(connection)
    if after == before:
        log.info("schema at revision %s", after)
    else:
        log.info("schema upgraded from revision %s to %s", before or "(none)", after)


def upgrade_sqlite(path: Path) -> None:
    """On SQLite: the whole upgrade inside one `BEGIN IMMEDIATE` (the write lock)."""
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": SQLITE_LOCK_WAIT_SECONDS})

    @event.listens_for(engine, "connect")
    def _no_implicit_transactions(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        dbapi_connection.isolation_level = None  # so DDL runs inside our transaction, not outside it

    @event.listens_for(engine, "begin")
    def _take_the_write_lock(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    try:
        with engine.begin() as connection:
            upgrade(connection)
    finally:
        engine.dispose()


async def upgrade_postgres(url: str) -> None:
    """On PostgreSQL: the whole upgrade in one transaction that first takes an advisory lock.
    asyncpg opens the connection from the URL itself, so libpq's `sslmode` works as it does
    for the pool (SQLAlchemy would pass it on as an unknown keyword)."""
    import asyncpg
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine("postgresql+asyncpg://", async_creator=lambda: asyncpg.connect(url))
    try:
        async with engine.begin() as connection:
            await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
            await connection.run_sync(upgrade)
    finally:
        await engine.dispose()
