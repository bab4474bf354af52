"""Reading a store the way an operator's SQL client would, independent of the store's own code:
`sqlite3` for SQLite and `asyncpg` for PostgreSQL. Queries use `:name` parameters."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

_PARAMETER = re.compile(r":([a-z_]+)")


async def rows(url: str, query: str, **params: Any) -> list[tuple]:
    if url.startswith("sqlite"):
        database = sqlite3.connect(f"file:{url.split(':///', 1)[1]}?mode=ro", uri=True)
        try:
            return [tuple(row) for row in database.execute(query, params).fetchall()]
        finally:
            database.close()
    import asyncpg

    names: list[str] = []

    def numbered(match: re.Match) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    connection = await asyncpg.connect(url)
    try:
        return [
            tuple(row)
            for row in await connection.fetch(_PARAMETER.sub(numbered, query), *(params[name] for name in names))
        ]
    finally:
        await connection.close()


async def value(url: str, query: str, **params: Any) -> Any:
    found = await rows(url, query, **params)
    return found[0][0] if found else None


async def execute(url: str, *statements: str) -> None:
    """Run statements that change the store (for setting up a case by hand)."""
    if url.startswith("sqlite"):
        database = sqlite3.connect(url.split(":///", 1)[1])
        try:
            for statement in statements:
                database.execute(statement)
            database.commit()
        finally:
            database.close()
        return
    import asyncpg

    connection = await asyncpg.connect(url)
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


async def everything(url: str) -> bytes:
    """Every row of every table of the store, as text."""
    from store.schema import metadata

    dumped = []
    for table in metadata.sorted_tables:
        dumped += [repr(row) for row in await rows(url, f"SELECT * FROM {table.name}")]
    return "\n".join(dumped).encode()
