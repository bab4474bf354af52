"""The per-response event log that streaming tails. Sequence numbers are assigned here, in
order, inside the appending transaction; a concurrent appender that loses the race on a
number retries with the next.

Readers wait on `EventLog.notifier`: an append made in this process wakes them at once,
appends made by other processes at the notifier's next poll.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, func, insert, select
from sqlalchemy.exc import IntegrityError

from store.database import Database, Transaction
from store.notifier import Notifier
from store.schema import events
from store.turns import Fence

TERMINAL_EVENT_TYPES = frozenset(
    {"response.completed", "response.failed", "response.incomplete", "response.cancelled", "error"}
)


class EventLog:
    def __init__(self, db: Database, poll_seconds: float = 0.02) -> None:
        self.db = db
        self.notifier = Notifier(self._changed_since_last_poll, poll_seconds)
        """Readers wait here for new events of a response."""
        self._last_seen: dict[str, int] = {}

    async def _changed_since_last_poll(self, response_ids: list[str]) -> list[str]:
        """The responses whose last sequence number moved since the previous poll."""
        async with self.db.read() as transaction:
            rows = await transaction.execute(
                select(events.c.response_id, func.max(events.c.sequence_number))
                .where(events.c.response_id.in_(response_ids))
                .group_by(events.c.response_id)
            )
            latest = dict(rows.all())
        changed = [response_id for response_id, number in latest.items() if self._last_seen.get(response_id) != number]
        self._last_seen = latest
        return changed

    async def append(self, response_id: str, batch: list[dict[str, Any]], *, fence: Fence | None = None) -> list[int]:
        """Append events (without `sequence_number`) in order; returns their numbers. With a
        `fence`, only while its claim on the turn holds (`TurnLost` otherwise)."""
        if not batch:
            return []
        for _attempt in range(50):
            try:
                async with self.db.write() as transaction:
                    if fence is not None:
                        await fence.check(transaction)
                    numbers = await self.append_in(transaction, response_id, batch)
            except IntegrityError:
                continue  # another appender took these numbers first
            self.notifier.notify(response_id)
            return numbers
        raise RuntimeError(f"could not append events to {response_id}")

    async def append_once(self, response_id: str, batch: list[dict[str, Any]]) -> int:
        """Append the events of this batch that the log does not have yet, telling events apart
        by (output index, type): for the steps of an item, which happen once each."""
        indexes = {event["output_index"] for event in batch if event.get("output_index") is not None}
        async with self.db.read() as transaction:
            rows = await transaction.execute(
                select(events.c.output_index, events.c.type).where(
                    and_(events.c.response_id == response_id, events.c.output_index.in_(indexes))
                )
            )
            present = set(rows.all())
        fresh = [event for event in batch if (event.get("output_index"), event["type"]) not in present]
        await self.append(response_id, fresh)
        return len(fresh)

    async def append_in(
        self, transaction: Transaction, response_id: str, batch: list[dict[str, Any]], *, new_log: bool = False
    ) -> list[int]:
        """Append inside a caller's transaction (the caller notifies after commit).
        `new_log`: the response was created in this transaction, so its log starts at 0."""
        last = None
        if not new_log:
            last = (
                await transaction.execute(
                    select(func.max(events.c.sequence_number)).where(events.c.response_id == response_id)
                )
            ).scalar_one_or_none()
        first = 0 if last is None else last + 1
        rows = [
            {
                "response_id": response_id,
                "sequence_number": first + offset,
                "type": event["type"],
                "output_index": event.get("output_index"),
                "data": event | {"sequence_number": first + offset},
            }
            for offset, event in enumerate(batch)
        ]
        await transaction.execute(insert(events), rows)
        return [row["sequence_number"] for row in rows]

    async def read(self, response_id: str, *, after: int, limit: int = 1000) -> list[dict[str, Any]]:
        async with self.db.read() as transaction:
            rows = await transaction.execute(
                select(events.c.data)
                .where(and_(events.c.response_id == response_id, events.c.sequence_number > after))
                .order_by(events.c.sequence_number)
                .limit(limit)
            )
            return list(rows.scalars().all())

    async def item_events(self, response_id: str, *, from_output_index: int) -> list[dict[str, Any]]:
        """Item events already streamed at or after an output index (what a retry must respect)."""
        async with self.db.read() as transaction:
            rows = await transaction.execute(
                select(events.c.data)
                .where(and_(events.c.response_id == response_id, events.c.output_index >= from_output_index))
                .order_by(events.c.sequence_number)
            )
            return list(rows.scalars().all())

    async def has_events(self, response_id: str) -> bool:
        async with self.db.read() as transaction:
            found = await transaction.execute(
                select(events.c.sequence_number).where(events.c.response_id == response_id).limit(1)
            )
            return found.first() is not None
