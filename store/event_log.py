"""The per-response event log that streaming tails. Sequence numbers are assigned here, in
order, inside the appending transaction; a concurrent appender that loses the race on a
number retries with the next.

Readers wait on `EventLog.subscribe`. An append made in this process wakes them at once;
appends made by other processes are found by one poll per process, a single query for
every response tailed here, so the store's load does not grow with the number of streams.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any

from sqlalchemy import and_, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from store.database import write_transaction
from store.schema import events

log = logging.getLogger(__name__)

TERMINAL_EVENT_TYPES = frozenset(
    {"response.completed", "response.failed", "response.incomplete", "response.cancelled", "error"}
)


class EventNotifier:
    """In-process wake-ups: one waiter set per response id."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)

    def notify(self, response_id: str) -> None:
        for waiter in self._waiters.get(response_id, ()):
            waiter.set()

    def subscribe(self, response_id: str) -> asyncio.Event:
        """Register before reading, so an append between the read and the wait is not missed."""
        waiter = asyncio.Event()
        self._waiters[response_id].add(waiter)
        return waiter

    def unsubscribe(self, response_id: str, waiter: asyncio.Event) -> None:
        waiters = self._waiters.get(response_id)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[response_id]

    def watched(self) -> list[str]:
        """The response ids somebody waits on."""
        return list(self._waiters)

    @staticmethod
    async def wait(waiter: asyncio.Event, timeout: float) -> float:
        """Wait for a notification or the timeout; returns the seconds waited."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            await asyncio.wait_for(waiter.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        return loop.time() - started


class EventLog:
    def __init__(self, engine: AsyncEngine, notifier: EventNotifier | None = None, poll_seconds: float = 0.02) -> None:
        self.engine = engine
        self.notifier = notifier or EventNotifier()
        self.poll_seconds = poll_seconds
        self._poller: asyncio.Task[None] | None = None
        self._last_seen: dict[str, int] = {}

    def subscribe(self, response_id: str) -> asyncio.Event:
        """Register before reading, so an append between the read and the wait is not missed."""
        waiter = self.notifier.subscribe(response_id)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll_other_processes())
        return waiter

    def unsubscribe(self, response_id: str, waiter: asyncio.Event) -> None:
        self.notifier.unsubscribe(response_id, waiter)

    async def _poll_other_processes(self) -> None:
        while self.notifier.watched():
            await asyncio.sleep(self.poll_seconds)
            watched = self.notifier.watched()  # as it is now: streams come and go during the sleep
            if not watched:
                return
            try:
                latest = await self._latest_numbers(watched)
            except Exception as error:  # noqa: BLE001 - a failed poll is tried again next time
                log.warning("event log poll failed: %s", error)
                continue
            for response_id, number in latest.items():
                if self._last_seen.get(response_id) != number:
                    self._last_seen[response_id] = number
                    self.notifier.notify(response_id)
            self._last_seen = {key: value for key, value in self._last_seen.items() if key in latest}

    async def _latest_numbers(self, response_ids: list[str]) -> dict[str, int]:
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(events.c.response_id, func.max(events.c.sequence_number))
                .where(events.c.response_id.in_(response_ids))
                .group_by(events.c.response_id)
            )
            return {response_id: number for response_id, number in rows.all()}

    async def append(self, response_id: str, batch: list[dict[str, Any]]) -> list[int]:
        """Append events (without `sequence_number`) in order; returns their numbers."""
        if not batch:
            return []
        for _attempt in range(50):
            try:
                async with write_transaction(self.engine) as connection:
                    numbers = await self.append_in(connection, response_id, batch)
            except IntegrityError:
                continue  # another appender took these numbers first
            self.notifier.notify(response_id)
            return numbers
        raise RuntimeError(f"could not append events to {response_id}")

    async def append_in(
        self, connection: AsyncConnection, response_id: str, batch: list[dict[str, Any]], *, new_log: bool = False
    ) -> list[int]:
        """Append inside a caller's transaction (the caller notifies after commit).
        `new_log`: the response was created in this transaction, so its log starts at 0."""
        last = None
        if not new_log:
            last = (
                await connection.execute(
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
        await connection.execute(insert(events), rows)
        return [row["sequence_number"] for row in rows]

    async def read(self, response_id: str, *, after: int, limit: int = 1000) -> list[dict[str, Any]]:
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(events.c.data)
                .where(and_(events.c.response_id == response_id, events.c.sequence_number > after))
                .order_by(events.c.sequence_number)
                .limit(limit)
            )
            return list(rows.scalars().all())

    async def item_events(self, response_id: str, *, from_output_index: int) -> list[dict[str, Any]]:
        """Item events already streamed at or after an output index (what a retry must respect)."""
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(events.c.data)
                .where(and_(events.c.response_id == response_id, events.c.output_index >= from_output_index))
                .order_by(events.c.sequence_number)
            )
            return list(rows.scalars().all())

    async def has_events(self, response_id: str) -> bool:
        async with self.engine.connect() as connection:
            found = await connection.execute(
                select(events.c.sequence_number).where(events.c.response_id == response_id).limit(1)
            )
            return found.first() is not None
