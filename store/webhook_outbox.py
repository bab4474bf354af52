"""The webhook outbox: events waiting for their endpoints, a row an event and endpoint, and a
queue an endpoint with events waiting (when it is tried next, its failures in a row, its
circuit), for `webhooks/dispatcher.py`.

A receiver that is down for a day leaves its backlog here, in one place, instead of in
millions of open workflows; a round of the dispatcher reads the small queue table and the
head of each due queue, never the whole backlog. Putting an event is idempotent (a workflow
task that runs again puts the same rows), and wakes the dispatcher at once, in this process
and, by the store's wake-ups, in the others.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from models.webhooks import WebhookEvent, WebhookPolicy
from store.database import Database

WAKE_TOPIC = "webhooks"


@dataclass(frozen=True)
class OutboxEntry:
    endpoint: str
    event: WebhookEvent
    policy: WebhookPolicy
    attempts: int
    give_up_at: int
    """ms since the epoch."""


@dataclass(frozen=True)
class DueQueue:
    endpoint: str
    failures: int


class WebhookOutbox:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.nudged = asyncio.Event()
        """Set when an event was put (here or, heard, in another process)."""
        db.wakeups.listen(WAKE_TOPIC, lambda _key: self.nudged.set())

    async def put(self, endpoints: list[str], event: WebhookEvent, policy: WebhookPolicy, now_ms: int) -> None:
        if not endpoints:
            return
        async with self.db.write() as transaction:
            await transaction.run_many(
                "INSERT INTO webhook_outbox (endpoint, event_id, event, policy, created_at, give_up_at, attempts) "
                "VALUES (:endpoint, :event_id, :event, :policy, :now, :give_up_at, 0) "
                "ON CONFLICT (endpoint, event_id) DO NOTHING",
                [
                    {
                        "endpoint": endpoint,
                        "event_id": event.id,
                        "event": event.model_dump_json(),
                        "policy": policy.model_dump_json(),
                        "now": now_ms,
                        "give_up_at": now_ms + int(policy.give_up_after_seconds * 1000),
                    }
                    for endpoint in endpoints
                ],
            )
            await transaction.run_many(
                "INSERT INTO webhook_queues (endpoint, failures, next_attempt_at, open_until) "
                "VALUES (:endpoint, 0, :now, 0) ON CONFLICT (endpoint) DO NOTHING",
                [{"endpoint": endpoint, "now": now_ms} for endpoint in endpoints],
            )
        self.nudged.set()
        self.db.wakeups.publish(WAKE_TOPIC, "outbox")

    async def due_queues(self, now_ms: int) -> list[DueQueue]:
        """Endpoints with events waiting whose next attempt is due and whose circuit is closed
        (or half open: its cooldown is over). A queue stays when it empties (a row an
        endpoint): nothing is deleted that a concurrent put could need."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT q.endpoint, q.failures FROM webhook_queues q "
                "WHERE q.next_attempt_at <= :now AND q.open_until <= :now "
                "AND EXISTS (SELECT 1 FROM webhook_outbox o WHERE o.endpoint = q.endpoint)",
                now=now_ms,
            )
        return [DueQueue(row["endpoint"], row["failures"]) for row in rows]

    async def head(self, endpoint: str, limit: int) -> list[OutboxEntry]:
        """The endpoint's oldest events, in the order they were put."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT event, policy, attempts, give_up_at FROM webhook_outbox WHERE endpoint = :endpoint "
                "ORDER BY created_at, event_id LIMIT :limit",
                endpoint=endpoint,
                limit=limit,
            )
        return [
            OutboxEntry(
                endpoint,
                WebhookEvent.model_validate_json(row["event"]),
                WebhookPolicy.model_validate_json(row["policy"]),
                row["attempts"],
                row["give_up_at"],
            )
            for row in rows
        ]

    async def remove(self, entry: OutboxEntry, *, delivered: bool) -> None:
        """Delivered (the endpoint's failures and circuit start again), or never to be."""
        async with self.db.write() as transaction:
            await transaction.run(
                "DELETE FROM webhook_outbox WHERE endpoint = :endpoint AND event_id = :event_id",
                endpoint=entry.endpoint,
                event_id=entry.event.id,
            )
            if delivered:
                await transaction.run(
                    "UPDATE webhook_queues SET failures = 0, open_until = 0 WHERE endpoint = :endpoint",
                    endpoint=entry.endpoint,
                )

    async def retry_later(self, entry: OutboxEntry, next_attempt_at: int, open_until: int) -> None:
        """The attempt failed: the endpoint is tried again at `next_attempt_at`, its circuit
        open until `open_until` (0: closed)."""
        async with self.db.write() as transaction:
            await transaction.run(
                "UPDATE webhook_outbox SET attempts = attempts + 1 WHERE endpoint = :endpoint AND event_id = :event_id",
                endpoint=entry.endpoint,
                event_id=entry.event.id,
            )
            await transaction.run(
                "UPDATE webhook_queues SET failures = failures + 1, next_attempt_at = :at, open_until = :open_until "
                "WHERE endpoint = :endpoint",
                at=next_attempt_at,
                open_until=open_until,
                endpoint=entry.endpoint,
            )

    async def backlog(self) -> dict[str, int]:
        """Events waiting, by endpoint (a count over the backlog: read now and then)."""
        async with self.db.read() as transaction:
            rows = await transaction.all("SELECT endpoint, COUNT(*) AS waiting FROM webhook_outbox GROUP BY endpoint")
        return {row["endpoint"]: row["waiting"] for row in rows}

    async def open_circuits(self, now_ms: int) -> set[str]:
        async with self.db.read() as transaction:
            rows = await transaction.all("SELECT endpoint FROM webhook_queues WHERE open_until > :now", now=now_ms)
        return {row["endpoint"] for row in rows}
