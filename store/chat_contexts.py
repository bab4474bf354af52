"""Chat contexts: the chat-completion messages a response's inference call sent, plus its
reply, from which its next turn and any follow-up in its chain go on.

Each response keeps only its own messages, after those of the response it follows (its
base, up to `base_length` of them), so a chain of n turns stores each message once: O(n)
rather than O(n²). A context is read back along the chain in one recursive query. Deleting
a response that others follow first folds its own messages into theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from store.codec import dumps, loads
from store.database import Transaction

Messages = list[dict[str, Any]]

MAX_CHAIN_DEPTH = 100_000
"""A bound on the recursive read, against a cycle no code path makes."""


@dataclass(frozen=True)
class ContextBase:
    """The context a response's own messages follow: that of `response_id`, cut to `length`."""

    response_id: str | None = None
    length: int = 0


async def context_in(transaction: Transaction, response_id: str) -> Messages | None:
    """The whole context of a response (None when it has none)."""
    rows = await transaction.all(
        "WITH RECURSIVE chain(response_id, base_response_id, base_length, messages, depth) AS ("
        " SELECT response_id, base_response_id, base_length, messages, 0 FROM chat_contexts WHERE response_id = :id"
        " UNION ALL"
        " SELECT c.response_id, c.base_response_id, c.base_length, c.messages, chain.depth + 1"
        " FROM chat_contexts c JOIN chain ON c.response_id = chain.base_response_id WHERE chain.depth < :deepest"
        ") SELECT base_length, messages FROM chain ORDER BY depth DESC",
        id=response_id,
        deepest=MAX_CHAIN_DEPTH,
    )
    if not rows:
        return None
    context: Messages = []
    for row in rows:
        context = context[: row["base_length"] or 0] + (loads(row["messages"]) or [])
    return context


async def base_in(transaction: Transaction, response_id: str) -> ContextBase:
    """What a response's own messages follow (nothing, before its first turn is recorded)."""
    row = await transaction.one(
        "SELECT base_response_id, base_length FROM chat_contexts WHERE response_id = :id", id=response_id
    )
    if row is None:
        return ContextBase()
    return ContextBase(row["base_response_id"], row["base_length"] or 0)


async def put_in(transaction: Transaction, response_id: str, messages: Messages, base: ContextBase) -> None:
    """The response's whole context, kept as its own messages after `base`'s."""
    own = messages[base.length :] if base.response_id is not None else messages
    await transaction.run(
        "INSERT INTO chat_contexts (response_id, messages, base_response_id, base_length) "
        "VALUES (:id, :messages, :base, :length) "
        "ON CONFLICT (response_id) DO UPDATE SET messages = excluded.messages, "
        "base_response_id = excluded.base_response_id, base_length = excluded.base_length",
        id=response_id,
        messages=dumps(own),
        base=base.response_id,
        length=base.length if base.response_id is not None else 0,
    )


async def extend_in(transaction: Transaction, response_id: str, more: Messages) -> None:
    """Messages added at the response's end (what the model is told of calls left open)."""
    own = loads(await transaction.value("SELECT messages FROM chat_contexts WHERE response_id = :id", id=response_id))
    if own is None:
        await put_in(transaction, response_id, more, ContextBase())
        return
    await transaction.run(
        "UPDATE chat_contexts SET messages = :messages WHERE response_id = :id",
        id=response_id,
        messages=dumps(own + more),
    )


async def fold_into_followers(transaction: Transaction, response_id: str) -> None:
    """Before a response's context goes: each response that follows it takes the part of its
    messages it follows, and follows the response's own base instead."""
    followers = await transaction.all(
        "SELECT response_id, base_length, messages FROM chat_contexts WHERE base_response_id = :id", id=response_id
    )
    if not followers:
        return
    row = await transaction.one(
        "SELECT base_response_id, base_length, messages FROM chat_contexts WHERE response_id = :id", id=response_id
    )
    own = loads(row["messages"]) if row is not None else []
    base_id = row["base_response_id"] if row is not None else None
    base_length = (row["base_length"] or 0) if row is not None and base_id is not None else 0
    for follower in followers:
        followed = follower["base_length"] or 0
        if followed >= base_length:
            messages = own[: followed - base_length] + (loads(follower["messages"]) or [])
            length = base_length
        else:  # it followed only part of this response's base
            messages, length = loads(follower["messages"]) or [], followed
        await transaction.run(
            "UPDATE chat_contexts SET messages = :messages, base_response_id = :base, base_length = :length "
            "WHERE response_id = :id",
            id=follower["response_id"],
            messages=dumps(messages),
            base=base_id,
            length=length if base_id else 0,
        )
