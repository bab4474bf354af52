"""Approval requests background responses wait for, with when they were asked (microseconds):
the approvals-waiting gauge, the time to a decision, and the approvals list (`GET
/v1/approvals`, the inbox, through `store/pending_approvals.py`) read them. The workflow records a wait as it begins; a decision or
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
                    request_id=request_id,
                    response_id=response_id,
                    asked_at=asked_at,
                )
        return recorded

    async def count(self) -> tuple[int, float]:
        """How many approval requests responses wait for, and for how long the oldest has
        waited (seconds; 0 with none)."""
        async with self.db.read() as transaction:
            row = await transaction.one("SELECT COUNT(*) AS waiting, MIN(asked_at) AS oldest FROM approval_waits")
        if not row or not row["waiting"]:
            return 0, 0.0
        return int(row["waiting"]), max(0.0, time.time() - row["oldest"] / 1_000_000)
