"""Temporal histories waiting to be erased. A response's rows go in one transaction with the
request to erase its history, so nothing the store forgets stays readable in Temporal for
longer than it takes a worker to get to it (`response_service/history_eraser.py`)."""

from __future__ import annotations

import time

from store.database import Database, Transaction


class HistoryDeletions:
    def __init__(self, db: Database) -> None:
        self.db = db

    @staticmethod
    async def request_in(transaction: Transaction, workflow_ids: list[str]) -> None:
        if workflow_ids:
            await transaction.run_many(
                "INSERT INTO history_deletions (workflow_id, requested_at) VALUES (:workflow_id, :now) "
                "ON CONFLICT (workflow_id) DO NOTHING",
                [{"workflow_id": workflow_id, "now": time.time()} for workflow_id in workflow_ids],
            )

    async def due(self, limit: int = 100) -> list[tuple[str, float]]:
        """The oldest requests first: (workflow id, when it was asked for, Unix seconds)."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT workflow_id, requested_at FROM history_deletions ORDER BY requested_at LIMIT :limit",
                limit=limit,
            )
        return [(row["workflow_id"], row["requested_at"]) for row in rows]

    async def done(self, workflow_id: str) -> None:
        async with self.db.write() as transaction:
            await transaction.run("DELETE FROM history_deletions WHERE workflow_id = :id", id=workflow_id)
