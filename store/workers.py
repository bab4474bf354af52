"""Which workers are running: each writes its `last_seen` every few seconds and removes
itself when it stops, so an API process knows within seconds whether any worker serves its
task queue (Temporal's own poller list keeps a stopped worker for minutes)."""

from __future__ import annotations

import time

from store.database import Database

BEAT_SECONDS = 5.0
"""How often a running worker writes that it runs."""
ALIVE_WITHIN_SECONDS = 3 * BEAT_SECONDS
"""A worker not seen for this long is taken for stopped."""


class WorkerRegistry:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def beat(self, worker_id: str, task_queue: str) -> None:
        async with self.db.write() as transaction:
            await transaction.run(
                "INSERT INTO workers (id, task_queue, last_seen) VALUES (:id, :queue, :now) "
                "ON CONFLICT (id) DO UPDATE SET last_seen = :now",
                id=worker_id,
                queue=task_queue,
                now=time.time_ns() // 1000,
            )

    async def gone(self, worker_id: str) -> None:
        async with self.db.write() as transaction:
            await transaction.run("DELETE FROM workers WHERE id = :id", id=worker_id)

    async def alive(self, task_queue: str, *, within_seconds: float) -> int:
        """How many workers of `task_queue` were seen within the last `within_seconds`."""
        since = time.time_ns() // 1000 - int(within_seconds * 1_000_000)
        async with self.db.read() as transaction:
            return (
                await transaction.value(
                    "SELECT count(*) FROM workers WHERE task_queue = :queue AND last_seen > :since",
                    queue=task_queue,
                    since=since,
                )
                or 0
            )
