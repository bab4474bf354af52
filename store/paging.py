"""Pages of ordered items (a response's input items, a conversation's items), with item ids as
cursors, as OpenAI's list routes page them."""

from __future__ import annotations

from typing import Any, Literal

from store.codec import loads
from store.database import Transaction

Order = Literal["asc", "desc"]
ITEM_TABLES = {"input_items": "response_id", "conversation_items": "conversation_id"}
"""The tables of ordered items, and the column naming what each item belongs to."""


async def page_of_items(
    transaction: Transaction,
    table: str,
    owner_id: str,
    *,
    after: str | None,
    before: str | None,
    limit: int,
    order: Order,
) -> tuple[list[dict[str, Any]], bool]:
    """Up to `limit` items after `after` and before `before` (ids, in the order asked), and
    whether more follow. Raises LookupError naming a cursor that is not an item here."""
    owner = ITEM_TABLES[table]
    where, params = f"{owner} = :owner", {"owner": owner_id, "limit": limit + 1}
    flipped: Order = "desc" if order == "asc" else "asc"
    for name, cursor_id, direction in (("after", after, order), ("before", before, flipped)):
        if cursor_id is None:
            continue
        position = await transaction.value(
            f"SELECT position FROM {table} WHERE {owner} = :owner AND item_id = :item_id",
            owner=owner_id,
            item_id=cursor_id,
        )
        if position is None:
            raise LookupError(cursor_id)
        where += f" AND position {'>' if direction == 'asc' else '<'} :{name}"
        params[name] = position
    rows = await transaction.all(
        f"SELECT data FROM {table} WHERE {where} ORDER BY position {order.upper()} LIMIT :limit", **params
    )
    return [loads(row["data"]) for row in rows[:limit]], len(rows) > limit


async def page_of_rows(
    transaction: Transaction,
    table: str,
    columns: str,
    where: str,
    params: dict[str, Any],
    *,
    id_column: str = "id",
    after: str | None,
    before: str | None = None,
    limit: int,
    order: Order,
) -> tuple[list[Any], bool]:
    """Up to `limit` rows of `table` matching `where`, in `sort_key` order, after `after` and
    before `before` (ids of rows that `where` matches), and whether more follow. Raises
    LookupError naming a cursor that is not such a row."""
    params = dict(params, limit=limit + 1)
    flipped: Order = "desc" if order == "asc" else "asc"
    for name, cursor_id, direction in (("after", after, order), ("before", before, flipped)):
        if cursor_id is None:
            continue
        key = await transaction.value(
            f"SELECT sort_key FROM {table} WHERE {where} AND {id_column} = :{name}_id",
            **params,
            **{f"{name}_id": cursor_id},
        )
        if key is None:
            raise LookupError(cursor_id)
        sign = ">" if direction == "asc" else "<"
        where += f" AND (sort_key {sign} :{name}_key OR (sort_key = :{name}_key AND {id_column} {sign} :{name}_id))"
        params[f"{name}_key"], params[f"{name}_id"] = key, cursor_id
    rows = await transaction.all(
        f"SELECT {columns} FROM {table} WHERE {where} ORDER BY sort_key {order.upper()}, {id_column} {order.upper()} "
        "LIMIT :limit",
        **params,
    )
    return rows[:limit], len(rows) > limit
