"""Steers in the store (`models/steering.py`): kept before a response's workflow takes one,
and what became of each.

A steer is added only while its response runs (the insert checks, in the same statement,
that the response is queued or in progress): once the store has a response's end, nothing
can join it. What its workflow decides moves it on (`commit_in`, `mark`), each move only
from `queued`, or from `pending` to `committed`, so a retried step moves nothing twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from models.steering import STEERABLE_STATUSES, SteerStatus
from store.codec import dumps, loads
from store.database import Database, Row, Transaction


@dataclass(frozen=True)
class Steer:
    id: str
    response_id: str
    status: SteerStatus
    items: list[tuple[str, dict[str, Any]]]
    """Its input items as listed (item id, item)."""
    successor_id: str | None = None
    required_input: list[dict[str, str]] | None = None
    error_code: str | None = None

    def input_items(self) -> list[dict[str, Any]]:
        """Its messages as `input` takes them (without the ids they were kept under)."""
        return [{"type": "message", "role": item["role"], "content": item["content"]} for _, item in self.items]

    @classmethod
    def of(cls, row: Row) -> Steer:
        return cls(
            id=row["id"],
            response_id=row["response_id"],
            status=row["status"],
            items=[(item_id, item) for item_id, item in loads(row["items"])],
            successor_id=row["successor_id"],
            required_input=loads(row["required_input"]),
            error_code=row["error_code"],
        )


COLUMNS = "id, response_id, status, items, successor_id, required_input, error_code"


class Steers:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, steer_id: str, response_id: str, project: str, items: list[tuple[str, dict[str, Any]]]) -> bool:
        """Keep a steer for a response of `project` that runs; False when it does not (it
        ended, or is not the project's)."""
        async with self.db.write() as transaction:
            added = await transaction.run(
                "INSERT INTO steers (id, response_id, project, sort_key, items, status) "
                "SELECT :id, :response_id, :project, :sort_key, :items, 'queued' FROM responses "
                "WHERE id = :response_id AND project = :project AND status IN (:steerable)",
                id=steer_id,
                response_id=response_id,
                project=project,
                sort_key=time.time_ns() // 1000,
                items=dumps([[item_id, item] for item_id, item in items]),
                steerable=sorted(STEERABLE_STATUSES),
            )
        return added > 0

    async def some(self, steer_ids: list[str]) -> list[Steer]:
        """These steers, in the order they came."""
        if not steer_ids:
            return []
        async with self.db.read() as transaction:
            rows = await transaction.all(
                f"SELECT {COLUMNS} FROM steers WHERE id IN (:ids) ORDER BY sort_key, id", ids=steer_ids
            )
        return [Steer.of(row) for row in rows]

    async def of_response(self, response_id: str, status: SteerStatus | None = None) -> list[Steer]:
        """A response's steers (with `status` only), in the order they came."""
        where, params = "response_id = :response_id", {"response_id": response_id}
        if status is not None:
            where, params = where + " AND status = :status", params | {"status": status}
        async with self.db.read() as transaction:
            rows = await transaction.all(f"SELECT {COLUMNS} FROM steers WHERE {where} ORDER BY sort_key, id", **params)
        return [Steer.of(row) for row in rows]

    async def mark(
        self,
        steer_ids: list[str],
        status: SteerStatus,
        *,
        required_input: list[dict[str, str]] | None = None,
        error_code: str | None = None,
    ) -> int:
        """Move queued steers on to `pending` (with what the client must answer first) or
        `failed` (with why); returns how many moved."""
        if not steer_ids:
            return 0
        async with self.db.write() as transaction:
            return await transaction.run(
                "UPDATE steers SET status = :status, required_input = :required, error_code = :code "
                "WHERE id IN (:ids) AND status = 'queued'",
                status=status,
                required=None if required_input is None else dumps(required_input),
                code=error_code,
                ids=steer_ids,
            )

    @staticmethod
    async def commit_in(transaction: Transaction, steer_ids: list[str], successor_id: str) -> None:
        """In the transaction that keeps the successor: its steers are committed to it."""
        if steer_ids:
            await transaction.run(
                "UPDATE steers SET status = 'committed', successor_id = :successor "
                "WHERE id IN (:ids) AND status IN ('queued', 'pending')",
                successor=successor_id,
                ids=steer_ids,
            )
