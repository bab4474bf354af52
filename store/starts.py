"""Which running responses a sweep has yet to look at (`worker/orphans.py`): those whose
workflow no sweep has found started. A response found started is marked, and an index holds
only the unmarked running ones, so a sweep costs what it finds, not what waits."""

from __future__ import annotations

import logging

from models.responses import Response
from store.database import Database

log = logging.getLogger(__name__)


class Starts:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def unconfirmed_created_between(self, start: float, end: float, limit: int = 500) -> list[Response]:
        """Responses (stored or not) still queued or in progress, created in [start, end)
        (Unix seconds), whose workflow no sweep has found started yet (an index holds just
        those: responses waiting for days cost nothing here)."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT data FROM responses WHERE NOT start_confirmed AND status IN ('queued', 'in_progress') "
                "AND sort_key >= :start AND sort_key < :end ORDER BY sort_key LIMIT :limit",
                start=int(start * 1_000_000),
                end=int(end * 1_000_000),
                limit=limit,
            )
        running = []
        for row in rows:
            try:
                running.append(Response.model_validate_json(row["data"]))
            except ValueError as error:  # a row no version of this server can read is skipped, not fatal
                log.warning("skipping unreadable response row: %s", error)
        return running

    async def confirm_started(self, response_ids: list[str]) -> None:
        """Their workflows are known to have started: no sweep looks at them again."""
        if response_ids:
            async with self.db.write() as transaction:
                await transaction.run(
                    "UPDATE responses SET start_confirmed = TRUE WHERE id IN (:ids)", ids=response_ids
                )
