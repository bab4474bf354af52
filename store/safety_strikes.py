"""Blocked responses counted against their `safety_identifier` (`docs/guardrails.md`).

A response a moderation check blocked is a strike for its project's end user (the request's
`safety_identifier`). Once an operator-set number of strikes falls within a window, the
identifier is blocked: its requests are refused until strikes age out of the window. A strike
is kept once per response, so a finalize that runs again counts nothing twice.
"""

from __future__ import annotations

import time

from store.database import Database


class SafetyStrikes:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, project: str, identifier: str, response_id: str, window_seconds: float) -> int:
        """Keep the response's strike (once); its place among the identifier's strikes within
        the window (1: the first), the same when it is recorded again."""
        now = time.time()
        async with self.db.write() as transaction:
            await transaction.run(
                "INSERT INTO safety_strikes (response_id, project, safety_identifier, struck_at) "
                "VALUES (:response_id, :project, :identifier, :at) ON CONFLICT (response_id) DO NOTHING",
                response_id=response_id,
                project=project,
                identifier=identifier,
                at=now,
            )
            rows = await transaction.all(
                "SELECT response_id FROM safety_strikes WHERE project = :project AND safety_identifier = :identifier "
                "AND struck_at > :since ORDER BY struck_at, response_id",
                project=project,
                identifier=identifier,
                since=now - window_seconds,
            )
        ids = [row["response_id"] for row in rows]
        return ids.index(response_id) + 1 if response_id in ids else 0

    async def within(self, project: str, identifier: str, window_seconds: float) -> int:
        async with self.db.read() as transaction:
            count = await transaction.value(
                "SELECT COUNT(*) FROM safety_strikes WHERE project = :project AND safety_identifier = :identifier "
                "AND struck_at > :since",
                project=project,
                identifier=identifier,
                since=time.time() - window_seconds,
            )
        return int(count or 0)

    async def forget_before(self, before: float) -> int:
        """Strikes that aged out of every window (housekeeping)."""
        async with self.db.write() as transaction:
            return await transaction.run("DELETE FROM safety_strikes WHERE struck_at < :before", before=before)
