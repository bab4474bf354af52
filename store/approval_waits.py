"""Approval requests background responses wait for, with when they were asked (microseconds):
the approvals-waiting gauge, the time to a decision, and the approvals list (`GET
/v1/approvals`, the inbox) read them. The workflow records a wait as it begins; a decision or
the response's end removes it (`store/repository.py`)."""

from __future__ import annotations

import time

from store.database import Database


class ApprovalWaits:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, response_id: str, approval_request_ids: list[str]) -> int:
        """The response now waits for these requests (a request already recorded stays as it was)."""
        asked_at = time.time_ns() // 1000
        async with self.db.write() as transaction:
            recorded = 0
            for request_id in approval_request_ids:
                recorded += await transaction.run(
                    "INSERT INTO approval_waits (approval_request_id, response_id, asked_at) "
                    "VALUES (:request_id, :response_id, :asked_at) ON CONFLICT (approval_request_id) DO NOTHING",
                    request_id=request_id, response_id=response_id, asked_at=asked_at)
        return recorded

    async def pending(self, project: str, *, after: tuple[int, str] | None,
                      limit: int) -> list[tuple[str, str, int]]:
        """(approval request id, response id, asked at in µs) of the requests the project's
        background responses wait for, oldest first, from after the (asked at, id) cursor."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT w.approval_request_id, w.response_id, w.asked_at FROM approval_waits w "
                "JOIN responses r ON r.id = w.response_id "
                "WHERE r.project = :project AND r.status = 'in_progress' "
                "AND (w.asked_at > :asked_at OR (w.asked_at = :asked_at AND w.approval_request_id > :id)) "
                "ORDER BY w.asked_at, w.approval_request_id LIMIT :limit",
                project=project, asked_at=after[0] if after else -1, id=after[1] if after else "", limit=limit,
            )
        return [(row["approval_request_id"], row["response_id"], row["asked_at"]) for row in rows]

    async def cursor(self, project: str, approval_request_id: str) -> tuple[int, str] | None:
        """(asked at, id) of a request the project's responses wait for: where a page starts after it."""
        async with self.db.read() as transaction:
            asked_at = await transaction.value(
                "SELECT w.asked_at FROM approval_waits w JOIN responses r ON r.id = w.response_id "
                "WHERE w.approval_request_id = :id AND r.project = :project",
                id=approval_request_id, project=project)
        return None if asked_at is None else (asked_at, approval_request_id)

    async def count(self) -> tuple[int, float]:
        """How many approval requests responses wait for, and for how long the oldest has
        waited (seconds; 0 with none)."""
        async with self.db.read() as transaction:
            row = await transaction.one("SELECT COUNT(*) AS waiting, MIN(asked_at) AS oldest FROM approval_waits")
        if not row or not row["waiting"]:
            return 0, 0.0
        return int(row["waiting"]), max(0.0, time.time() - row["oldest"] / 1_000_000)
