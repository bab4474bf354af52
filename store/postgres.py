"""The store on PostgreSQL: an asyncpg pool, `:name` parameters as `$n`, and transactions that
outlast a server's restart (`store/database.py` has the interface and SQLite's side)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from models.errors import StoreRefusedError, StoreUnavailableError
from store.database import _NAMED, Conflict, Row, Transaction, _expand_lists
from store.wakeups import PostgresWakeups, Wakeups


@lru_cache(maxsize=512)
def _positional(query: str) -> tuple[str, tuple[str, ...]]:
    """`:name` parameters as asyncpg's `$n`, and the names in their order."""
    order: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in order:
            order.append(name)
        return f"${order.index(name) + 1}"

    return _NAMED.sub(number, query), tuple(order)


class _PostgresTransaction:
    def __init__(self, connection: Any) -> None:
        self._connection = connection

    async def _call(self, method: str, query: str, params: Mapping[str, Any]) -> Any:
        import asyncpg

        query, flat = _expand_lists(query, params)
        text, names = _positional(query)
        try:
            return await getattr(self._connection, method)(text, *[flat[name] for name in names])
        except asyncpg.UniqueViolationError as error:
            raise Conflict(str(error)) from error
        except asyncpg.DataError as error:
            raise StoreRefusedError(f"the database refused a value: {error}") from error
        except _disconnections() as error:
            raise StoreUnavailableError(f"the database connection was lost: {error}") from error

    async def all(self, query: str, **params: Any) -> list[Row]:
        rows: list[Row] = await self._call("fetch", query, params)
        return rows

    async def one(self, query: str, **params: Any) -> Row | None:
        row: Row | None = await self._call("fetchrow", query, params)
        return row

    async def value(self, query: str, **params: Any) -> Any:
        return await self._call("fetchval", query, params)

    async def run(self, query: str, **params: Any) -> int:
        status = await self._call("execute", query, params)
        count = status.rsplit(" ", 1)[-1]
        return int(count) if count.isdigit() else 0

    async def run_many(self, query: str, rows: Sequence[Mapping[str, Any]]) -> None:
        import asyncpg

        text, names = _positional(query)
        try:
            await self._connection.executemany(text, [[row[name] for name in names] for row in rows])
        except asyncpg.UniqueViolationError as error:
            raise Conflict(str(error)) from error
        except asyncpg.DataError as error:
            raise StoreRefusedError(f"the database refused a value: {error}") from error
        except _disconnections() as error:
            raise StoreUnavailableError(f"the database connection was lost: {error}") from error


RECONNECT_SECONDS = 15.0
"""How long a transaction waits for the database to come back (a restart takes seconds)."""
RECONNECT_PAUSE_SECONDS = 0.1


def _disconnections() -> tuple[type[BaseException], ...]:
    """What asyncpg raises when the server went away, or does not take connections yet, or
    when a connection it dropped under a statement was left mid-operation (its protocol then
    refuses the next one with an `InternalClientError`)."""
    import asyncpg

    return (
        OSError,
        asyncpg.ConnectionDoesNotExistError,
        asyncpg.InterfaceError,
        asyncpg.InternalClientError,
        asyncpg.CannotConnectNowError,
        asyncpg.AdminShutdownError,
        asyncpg.ConnectionFailureError,
    )


async def _released(pool: Any, connection: Any) -> None:
    """Give a connection back to the pool, even from a task that is being cancelled: the
    release goes on under a shield while the cancellation goes on up. A connection the server
    dropped is replaced by the pool."""
    with contextlib.suppress(Exception):
        await asyncio.shield(pool.release(connection))


def _terminated(connection: Any) -> None:
    """Close a connection that failed so it is never handed out again (the pool opens a new
    one). One its server dropped, asyncpg has already given back to the pool: its proxy then
    refuses every call, and there is nothing left to close."""
    import asyncpg

    with contextlib.suppress(asyncpg.InterfaceError):
        connection.terminate()


async def _pause_or_give_up(error: BaseException, deadline: float) -> None:
    if time.monotonic() > deadline:
        raise StoreUnavailableError(f"the database cannot be reached: {error}") from error
    await asyncio.sleep(RECONNECT_PAUSE_SECONDS)


class PostgresDatabase:
    dialect = "postgresql"

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.url = "postgresql://" + url.split("://", 1)[1]
        self.pool_size = pool_size
        self._pool: Any = None
        self._opening = asyncio.Lock()
        self.wakeups: Wakeups = PostgresWakeups(self._connections, self._listening_connection)

    async def _listening_connection(self) -> Any:
        import asyncpg

        return await asyncpg.connect(self.url)

    async def _connections(self) -> Any:
        if self._pool is None:
            async with self._opening:
                if self._pool is None:
                    import asyncpg

                    self._pool = await asyncpg.create_pool(self.url, min_size=1, max_size=self.pool_size)
        return self._pool

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[Transaction]:
        async with self._transaction(readonly=True) as transaction:
            yield transaction

    @contextlib.asynccontextmanager
    async def scan(self) -> AsyncIterator[Transaction]:
        """asyncpg waits for the server without holding the loop: a scan is a read."""
        async with self._transaction(readonly=True) as transaction:
            yield transaction

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[Transaction]:
        async with self._transaction(readonly=False) as transaction:
            yield transaction

    @contextlib.asynccontextmanager
    async def _transaction(self, *, readonly: bool) -> AsyncIterator[Transaction]:
        """A transaction on a connection that works: its BEGIN is the pre-ping. A pooled
        connection the server closed (a restart, a failover), or a server still starting, is
        retried on a fresh connection for up to RECONNECT_SECONDS, before any of the caller's
        statements ran. A connection lost in the middle raises `StoreUnavailableError` (the
        API answers 503, which clients retry; nothing of the transaction was kept)."""
        pool = await self._connections()
        deadline = time.monotonic() + RECONNECT_SECONDS
        while True:
            try:
                connection = await pool.acquire()
            except _disconnections() as error:
                await _pause_or_give_up(error, deadline)
                continue
            try:
                transaction = connection.transaction(readonly=readonly)
                await transaction.start()
                break
            except _disconnections() as error:
                _terminated(connection)
                await _released(pool, connection)
                await _pause_or_give_up(error, deadline)
            except BaseException:  # cancelled while beginning: the connection goes back all the same
                await _released(pool, connection)
                raise
        try:
            try:
                yield _PostgresTransaction(connection)
            except BaseException:
                # Shielded: a task cancelled here must still end its transaction, or the pool
                # has to (and complains that it did).
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.shield(transaction.rollback())
                raise
            try:
                await transaction.commit()
            except _disconnections() as error:
                raise StoreUnavailableError(f"the database connection was lost: {error}") from error
        finally:
            await _released(pool, connection)

    async def migrate(self) -> None:
        from store.migrate import upgrade_postgres  # Alembic costs 0.2 s to import: only where it is used

        await upgrade_postgres(self.url)

    def erase_deleted_soon(self) -> None:
        """A deleted row stays in its page until VACUUM reclaims it (autovacuum does); sealed
        secrets there cannot be opened without SECRETS_KEY, which the database never holds."""

    async def close(self) -> None:
        await self.wakeups.close()
        if self._pool is not None:
            await self._pool.close()
