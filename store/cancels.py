"""Clients' cancels of running responses: a row a response (`cancel_requests`), and the feed
that wakes whoever waits for one.

A cancel reaches a response twice: here, where a running model or MCP call watches for it
and stops at once (`activities/cancel_watch.py`), and as Temporal's cancel request, which
reaches the workflow wherever else it waits. Recording one is idempotent, also when several
processes cancel the same response at once; it wakes this process's watchers at once and,
through the store's wake-ups, every other process's.
"""

from __future__ import annotations

import time

from store.database import Database
from store.notifier import Notifier


class CancelRequests:
    def __init__(self, db: Database, poll_seconds: float) -> None:
        self.db = db
        self.notifier = Notifier(self.requested, poll_seconds, channel=db.wakeups, topic="cancels")
        """Running calls wait here for a client's cancel of their response."""

    async def request(self, response_id: str) -> None:
        """Record that the client cancelled the response, and wake its watchers."""
        async with self.db.write() as transaction:
            await transaction.run(
                "INSERT INTO cancel_requests (response_id, requested_at) VALUES (:id, :at) "
                "ON CONFLICT (response_id) DO NOTHING",
                id=response_id,
                at=time.time_ns() // 1000,
            )
        self.notifier.notify(response_id)

    async def requested(self, response_ids: list[str]) -> set[str]:
        """Which of these responses a client has cancelled."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT response_id FROM cancel_requests WHERE response_id IN (:ids)", ids=response_ids
            )
        return {row["response_id"] for row in rows}
