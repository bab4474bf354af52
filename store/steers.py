"""Steers in the store (`models/steering.py`): kept before a response's workflow takes one,
and what became of each.

A steer is added only while its response runs (checked under the response row's lock):
once the store has a response's end, nothing can join it, so the steers queued then are all
there will be. What its workflow decides moves it on (`commit_in`, `mark`), each move only
from `queued`, or from `pending` to `committed`, so a retried step moves nothing twice.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from models.events import opening_events
from models.responses import Response
from models.steering import STEERABLE_STATUSES, SUCCESSOR_STATUSES, SteerStatus, successor_of
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

    async def add(
        self, steer_id: str, response_id: str, project: str, items: list[tuple[str, dict[str, Any]]], *, most: int
    ) -> Literal["added", "not_running", "full"]:
        """Keep a steer for a response of `project` that runs and holds fewer than `most`
        queued steers."""
        async with self.db.write() as transaction:
            # A write to the response's row takes its lock: a steer and the response's end
            # (`Responses.finish`), or two steers, are one after the other.
            running = await transaction.run(
                "UPDATE responses SET status = status "
                "WHERE id = :response_id AND project = :project AND status IN (:steerable)",
                response_id=response_id,
                project=project,
                steerable=sorted(STEERABLE_STATUSES),
            )
            if not running:
                return "not_running"
            queued = await transaction.value(
                "SELECT COUNT(*) FROM steers WHERE response_id = :response_id AND status = 'queued'",
                response_id=response_id,
            )
            if queued >= most:
                return "full"
            await transaction.run(
                "INSERT INTO steers (id, response_id, project, sort_key, items, status) "
                "VALUES (:id, :response_id, :project, :sort_key, :items, 'queued')",
                id=steer_id,
                response_id=response_id,
                project=project,
                sort_key=time.time_ns() // 1000,
                items=dumps([[item_id, item] for item_id, item in items]),
            )
        return "added"

    async def some(self, steer_ids: list[str]) -> list[Steer]:
        """These steers, in the order they came."""
        if not steer_ids:
            return []
        async with self.db.read() as transaction:
            rows = await transaction.all(
                f"SELECT {COLUMNS} FROM steers WHERE id IN (:ids) ORDER BY sort_key, id", ids=steer_ids
            )
        return [Steer.of(row) for row in rows]

    async def of_response(
        self, response_id: str, status: SteerStatus | None = None, *, project: str | None = None
    ) -> list[Steer]:
        """A response's steers (with `status` only; `project`'s only, when it is a request's to
        read: another project's steers are never read for it), in the order they came."""
        where, params = "response_id = :response_id", {"response_id": response_id}
        if project is not None:
            where, params = where + " AND project = :project", params | {"project": project}
        if status is not None:
            where, params = where + " AND status = :status", params | {"status": status}
        async with self.db.read() as transaction:
            rows = await transaction.all(f"SELECT {COLUMNS} FROM steers WHERE {where} ORDER BY sort_key, id", **params)
        return [Steer.of(row) for row in rows]

    async def mark(self, steer_ids: list[str], status: SteerStatus, *, error_code: str | None = None) -> int:
        """Move queued steers on (`failed`, with why); returns how many moved."""
        if not steer_ids:
            return 0
        async with self.db.write() as transaction:
            return await mark_in(transaction, steer_ids, status, error_code=error_code)

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


async def mark_in(
    transaction: Transaction,
    steer_ids: list[str],
    status: SteerStatus,
    *,
    required_input: list[dict[str, str]] | None = None,
    error_code: str | None = None,
) -> int:
    return await transaction.run(
        "UPDATE steers SET status = :status, required_input = :required, error_code = :code "
        "WHERE id IN (:ids) AND status = 'queued'",
        status=status,
        required=None if required_input is None else dumps(required_input),
        code=error_code,
        ids=steer_ids,
    )


CreateIn = Callable[..., Awaitable[None]]
"""`store/responses.py`'s `Responses._create_in`: keep a response within a transaction."""


@dataclass
class SteerSettlement:
    """How a response's end settles the steers it holds, in the transaction that writes the end
    (`Responses.finish`): no steer can join a response once its end is written, so
    these are all of them. `made`: the successor made, once settled."""

    successor_id: str
    """The id a successor gets (the workflow's: the same on every retry)."""
    required_input: list[dict[str, str]] = field(default_factory=list)
    """What the client owes the response: its steers stay `pending` for its continuation."""
    made: str | None = None

    async def made_before(self, transaction: Transaction) -> None:
        """The end was written by an earlier attempt: did it make the successor?"""
        found = await transaction.value("SELECT id FROM responses WHERE id = :id", id=self.successor_id)
        self.made = self.successor_id if found is not None else None

    async def settle_in(self, transaction: Transaction, ended: Response, create_in: CreateIn) -> None:
        rows = await transaction.all(
            f"SELECT {COLUMNS} FROM steers WHERE response_id = :id AND status = 'queued' ORDER BY sort_key, id",
            id=ended.id,
        )
        queued = [Steer.of(row) for row in rows]
        ids = [steer.id for steer in queued]
        if not queued:
            return
        if ended.status not in SUCCESSOR_STATUSES:
            await mark_in(transaction, ids, "failed", error_code="response_not_active")
        elif self.required_input:
            await mark_in(transaction, ids, "pending", required_input=self.required_input)
        else:
            successor = successor_of(ended, self.successor_id, int(time.time()))
            await create_in(
                transaction,
                successor,
                [item for steer in queued for item in steer.items],
                opening_events(successor),
                project=await transaction.value("SELECT project FROM responses WHERE id = :id", id=ended.id),
                commits=ids,
                secrets_of=ended.id,
            )
            self.made = successor.id
