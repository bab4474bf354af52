"""Conversations in the store: the conversation itself, its items in order, and the lock a
running response holds on it.

A conversation's items are kept once. A response on a conversation reads them as the start
of its context; its end appends its input and output items and releases the lock, in the
transaction that writes that end (`Responses.finish` calls `append_turn`), so a
crash never leaves half a turn. The lock is taken in the transaction that stores the
response: a second response on a conversation whose lock a running response holds is
refused, and a lock left by a response that has ended (or is gone) is taken over.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from models.errors import InvalidRequestError, NotFoundError
from models.responses import TERMINAL_STATUSES
from store.codec import dumps, loads
from store.database import Database, Transaction
from store.history_deletions import HistoryDeletions
from store.paging import page_of_items
from store.schema import NO_PROJECT

Order = Literal["asc", "desc"]

MAX_ITEMS = 10_000
"""Items one conversation keeps: every response on it reads them all."""


class ConversationLockedError(InvalidRequestError):
    """OpenAI answers a second response on a busy conversation with this 400."""

    def __init__(self, conversation_id: str) -> None:
        super().__init__(
            f"Another response is running on conversation '{conversation_id}'; retry once it has finished.",
            param="conversation",
            code="conversation_locked",
        )


def conversation_not_found(conversation_id: str, param: str | None = None) -> NotFoundError:
    return NotFoundError(f"Conversation with id '{conversation_id}' not found.", param=param)


@dataclass(frozen=True)
class ConversationRow:
    id: str
    created_at: int
    metadata: dict[str, str]
    project: str = NO_PROJECT

    def to_wire(self) -> dict[str, Any]:
        return {"id": self.id, "object": "conversation", "created_at": self.created_at, "metadata": self.metadata}


class Conversations:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(self, row: ConversationRow, items: list[tuple[str, dict[str, Any]]]) -> None:
        async with self.db.write() as transaction:
            await transaction.run(
                "INSERT INTO conversations (id, created_at, metadata, project) "
                "VALUES (:id, :created_at, :metadata, :project)",
                id=row.id,
                created_at=row.created_at,
                metadata=dumps(row.metadata),
                project=row.project,
            )
            await self._append(transaction, row.id, items)

    async def get(self, conversation_id: str) -> ConversationRow | None:
        async with self.db.read() as transaction:
            found = await transaction.one(
                "SELECT id, created_at, metadata, project FROM conversations WHERE id = :id", id=conversation_id
            )
        return (
            None
            if found is None
            else ConversationRow(found["id"], found["created_at"], loads(found["metadata"]), found["project"])
        )

    async def update(self, conversation_id: str, metadata: dict[str, str]) -> ConversationRow | None:
        async with self.db.write() as transaction:
            changed = await transaction.run(
                "UPDATE conversations SET metadata = :metadata WHERE id = :id",
                id=conversation_id,
                metadata=dumps(metadata),
            )
        return await self.get(conversation_id) if changed else None

    async def delete(self, conversation_id: str) -> list[str]:
        """The conversation and its items; the Temporal histories of the responses that ran on
        it (which hold its items) are to be erased too, and their ids returned. The responses
        themselves stay, as OpenAI's do."""
        async with self.db.write() as transaction:
            removed = await transaction.run("DELETE FROM conversations WHERE id = :id", id=conversation_id)
            await transaction.run("DELETE FROM conversation_items WHERE conversation_id = :id", id=conversation_id)
            responses = await transaction.all(
                "SELECT id FROM responses WHERE conversation_id = :id", id=conversation_id
            )
            await HistoryDeletions.request_in(transaction, [row["id"] for row in responses])
        return [row["id"] for row in responses] if removed else []

    # ---- items -----------------------------------------------------------------------

    async def add_items(self, conversation_id: str, items: list[tuple[str, dict[str, Any]]]) -> None:
        """Append items a client adds; refused while a response runs on the conversation, or
        past `MAX_ITEMS`."""
        async with self.db.write() as transaction:
            await self._free(transaction, conversation_id)
            held = await self._count(transaction, conversation_id)
            if held + len(items) > MAX_ITEMS:
                raise InvalidRequestError(
                    f"Conversation '{conversation_id}' holds {held} items; with these it would hold more than "
                    f"{MAX_ITEMS}, the most one keeps. Delete some, or start a new conversation.",
                    param="items",
                    code="conversation_full",
                )
            await self._append(transaction, conversation_id, items)

    async def items(self, conversation_id: str) -> list[dict[str, Any]]:
        """Every item, in order: the context a response on the conversation starts from."""
        async with self.db.read() as transaction:
            return await self.items_in(transaction, conversation_id)

    @staticmethod
    async def items_in(transaction: Transaction, conversation_id: str) -> list[dict[str, Any]]:
        rows = await transaction.all(
            "SELECT data FROM conversation_items WHERE conversation_id = :id ORDER BY position", id=conversation_id
        )
        return [loads(row["data"]) for row in rows]

    async def list_items(
        self, conversation_id: str, *, after: str | None, limit: int, order: Order
    ) -> tuple[list[dict[str, Any]], bool]:
        async with self.db.read() as transaction:
            return await page_of_items(
                transaction, "conversation_items", conversation_id, after=after, before=None, limit=limit, order=order
            )

    async def item(self, conversation_id: str, item_id: str) -> dict[str, Any] | None:
        async with self.db.read() as transaction:
            data = await transaction.value(
                "SELECT data FROM conversation_items WHERE conversation_id = :id AND item_id = :item_id",
                id=conversation_id,
                item_id=item_id,
            )
        found: dict[str, Any] | None = loads(data)
        return found

    async def delete_item(self, conversation_id: str, item_id: str) -> bool:
        async with self.db.write() as transaction:
            await self._free(transaction, conversation_id)
            removed = await transaction.run(
                "DELETE FROM conversation_items WHERE conversation_id = :id AND item_id = :item_id",
                id=conversation_id,
                item_id=item_id,
            )
        return removed > 0

    # ---- the lock, and a response's turn -------------------------------------------------

    @staticmethod
    async def lock(transaction: Transaction, conversation_id: str, response_id: str) -> None:
        """Take the conversation for a response, in the transaction that stores it."""
        holder = await Conversations._holder(transaction, conversation_id)
        if holder is not None:
            raise ConversationLockedError(conversation_id)
        held = await Conversations._count(transaction, conversation_id)
        if held >= MAX_ITEMS:
            raise InvalidRequestError(
                f"Conversation '{conversation_id}' holds {held} items, the most one keeps ({MAX_ITEMS}): every "
                "response on it would read them all. Delete some, or start a new conversation.",
                param="conversation",
                code="conversation_full",
            )
        await transaction.run(
            "UPDATE conversations SET active_response_id = :response_id WHERE id = :id",
            id=conversation_id,
            response_id=response_id,
        )

    @staticmethod
    async def _free(transaction: Transaction, conversation_id: str) -> None:
        """Raise unless the conversation exists and no running response holds it."""
        if await Conversations._holder(transaction, conversation_id) is not None:
            raise ConversationLockedError(conversation_id)

    @staticmethod
    async def _holder(transaction: Transaction, conversation_id: str) -> str | None:
        """The running response that holds the conversation; a lock left by one that has
        ended, or is gone, holds nothing. Raises NotFoundError for an unknown conversation."""
        found = await transaction.one("SELECT active_response_id FROM conversations WHERE id = :id", id=conversation_id)
        if found is None:
            raise conversation_not_found(conversation_id, "conversation")
        holder = found["active_response_id"]
        if holder is None:
            return None
        status = await transaction.value("SELECT status FROM responses WHERE id = :id", id=holder)
        return holder if status is not None and status not in TERMINAL_STATUSES else None

    @staticmethod
    async def append_turn(
        transaction: Transaction, conversation_id: str, response_id: str, items: list[tuple[str, dict[str, Any]]]
    ) -> None:
        """A response's end: its items join the conversation (it may have been deleted since),
        and the lock it held is released."""
        held = await transaction.run(
            "UPDATE conversations SET active_response_id = NULL WHERE id = :id AND active_response_id = :response_id",
            id=conversation_id,
            response_id=response_id,
        )
        if held and items:
            await Conversations._append(transaction, conversation_id, items)

    @staticmethod
    async def _count(transaction: Transaction, conversation_id: str) -> int:
        return (
            await transaction.value(
                "SELECT COUNT(*) FROM conversation_items WHERE conversation_id = :id", id=conversation_id
            )
            or 0
        )

    @staticmethod
    async def _append(transaction: Transaction, conversation_id: str, items: list[tuple[str, dict[str, Any]]]) -> None:
        if not items:
            return
        last = await transaction.value(
            "SELECT MAX(position) FROM conversation_items WHERE conversation_id = :id", id=conversation_id
        )
        first = 0 if last is None else last + 1
        await transaction.run_many(
            "INSERT INTO conversation_items (conversation_id, position, item_id, data) "
            "VALUES (:conversation_id, :position, :item_id, :data)",
            [
                {
                    "conversation_id": conversation_id,
                    "position": first + offset,
                    "item_id": item_id,
                    "data": dumps(data),
                }
                for offset, (item_id, data) in enumerate(items)
            ],
        )


def new_conversation(conversation_id: str, metadata: dict[str, str] | None, project: str) -> ConversationRow:
    return ConversationRow(conversation_id, int(time.time()), metadata or {}, project)
