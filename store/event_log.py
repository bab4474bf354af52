"""The per-response event log that streaming tails. Sequence numbers are assigned here, in
order, inside the appending transaction; a concurrent appender that loses the race on a
number retries with the next.

Each event is kept as the JSON text a stream sends, so a tail passes it on as it is.
Readers wait on `EventLog.notifier`: an append wakes them at once, in this process and (by
the store's wake-ups) in the others.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from store.codec import dumps, loads
from store.database import Conflict, Database, Transaction
from store.notifier import Notifier
from store.turns import Fence

TERMINAL_EVENT_TYPES = frozenset(
    {"response.completed", "response.failed", "response.incomplete", "response.cancelled", "error"}
)


@dataclass(frozen=True)
class StoredEvent:
    sequence_number: int
    type: str
    data: str
    """The event as JSON text, `sequence_number` included."""
    written_at: int | None = None
    """When it was appended, in ms since the epoch (the writer's clock)."""


class EventLog:
    def __init__(self, db: Database, poll_seconds: float = 0.02) -> None:
        self.db = db
        self.notifier = Notifier(self._changed_since_last_poll, poll_seconds, channel=db.wakeups, topic="events")
        """Readers wait here for new events of a response."""
        self._last_seen: dict[str, int] = {}

    async def _changed_since_last_poll(self, response_ids: list[str]) -> list[str]:
        """The responses whose last sequence number moved since the previous poll."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT response_id, MAX(sequence_number) AS last FROM events WHERE response_id IN (:ids) "
                "GROUP BY response_id",
                ids=response_ids,
            )
        latest = {row["response_id"]: row["last"] for row in rows}
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
            except Conflict:
                continue  # another appender took these numbers first
            self.notifier.notify(response_id)
            return numbers
        raise RuntimeError(f"could not append events to {response_id}")

    async def append_once(self, response_id: str, batch: list[dict[str, Any]]) -> int:
        """Append the events of this batch that the log does not have yet, telling events apart
        by (output index, type): for the steps of an item, which happen once each."""
        indexes = {event["output_index"] for event in batch if event.get("output_index") is not None}
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT output_index, type FROM events WHERE response_id = :id AND output_index IN (:indexes)",
                id=response_id,
                indexes=sorted(indexes),
            )
        present = {(row["output_index"], row["type"]) for row in rows}
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
            last = await transaction.value(
                "SELECT MAX(sequence_number) FROM events WHERE response_id = :id", id=response_id
            )
        first = 0 if last is None else last + 1
        written_at = int(time.time() * 1000)
        rows = [
            {
                "response_id": response_id,
                "sequence_number": first + offset,
                "type": event["type"],
                "output_index": event.get("output_index"),
                "data": dumps(event | {"sequence_number": first + offset}),
                "written_at": written_at,
            }
            for offset, event in enumerate(batch)
        ]
        await transaction.run_many(
            "INSERT INTO events (response_id, sequence_number, type, output_index, data, written_at) "
            "VALUES (:response_id, :sequence_number, :type, :output_index, :data, :written_at)",
            rows,
        )
        return [row["sequence_number"] for row in rows]

    async def read(self, response_id: str, *, after: int, limit: int = 1000) -> list[StoredEvent]:
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT sequence_number, type, data, written_at FROM events "
                "WHERE response_id = :id AND sequence_number > :after ORDER BY sequence_number LIMIT :limit",
                id=response_id,
                after=after,
                limit=limit,
            )
        return [StoredEvent(row["sequence_number"], row["type"], row["data"], row["written_at"]) for row in rows]

    async def item_events(self, response_id: str, *, from_output_index: int, after: int = -1) -> list[dict[str, Any]]:
        """Item events already streamed at or after an output index (what a retry must respect);
        `after`: only those after this sequence number."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT data FROM events WHERE response_id = :id AND output_index >= :index "
                "AND sequence_number > :after ORDER BY sequence_number",
                id=response_id,
                index=from_output_index,
                after=after,
            )
        return [loads(row["data"]) for row in rows]

    async def has_events(self, response_id: str) -> bool:
        async with self.db.read() as transaction:
            return (
                await transaction.value("SELECT 1 FROM events WHERE response_id = :id LIMIT 1", id=response_id)
                is not None
            )

    async def sweep_orphaned(self, after: str, limit: int = 200) -> tuple[int, str]:
        """Remove the event logs whose response is gone, among the next `limit` logs after
        the response id `after` (a sweep costs the same however many logs there are, and
        goes round them all in turn). How many it removed, and where the next one starts
        ("" once it has gone round)."""
        async with self.db.write() as transaction:
            logs = [
                row["response_id"]
                for row in await transaction.all(
                    "SELECT DISTINCT response_id FROM events WHERE response_id > :after ORDER BY response_id "
                    "LIMIT :limit",
                    after=after,
                    limit=limit,
                )
            ]
            if not logs:
                return 0, ""
            present = {
                row["id"] for row in await transaction.all("SELECT id FROM responses WHERE id IN (:ids)", ids=logs)
            }
            gone = [response_id for response_id in logs if response_id not in present]
            if gone:
                await transaction.run("DELETE FROM events WHERE response_id IN (:ids)", ids=gone)
        return len(gone), logs[-1] if len(logs) == limit else ""
