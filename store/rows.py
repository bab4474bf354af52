"""Small statements more than one part of the store needs."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, insert, update

from store.database import Transaction


async def put_row(transaction: Transaction, table: Table, response_id: str, **values: Any) -> None:
    """Write the one row a response has in `table`: update it, or insert it the first time."""
    changed = await transaction.execute(update(table).where(table.c.response_id == response_id).values(**values))
    if changed.rowcount == 0:
        await transaction.execute(insert(table).values(response_id=response_id, **values))
