"""Upstream budgets in the store, shared by every worker and API process: each decision is
read, made (`upstream/pacing.py`) and written in one transaction that holds the budget's
row, so two workers never give the same slot away. A budget is keyed by
`Deployment.budget_key` (the deployment, or a `*` deployment's model name).

A budget whose every time has passed and whose learned rate is forgotten says no more than
no row at all: `states` reads only the others (what every process reads every second stays as
small as what is limited now), and `forget_idle` deletes them."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from store.database import Database, Row, Transaction
from upstream import pacing
from upstream.pacing import BudgetState, Decision, Lane, Limits

T = TypeVar("T")

COLUMNS = "next_free, next_free_tokens, learned_rate, decreased_at, blocked_until"
LIVE = (
    "next_free > :now OR next_free_tokens > :now OR blocked_until > :now "
    "OR (learned_rate IS NOT NULL AND decreased_at >= :forgotten)"
)
"""A budget that still says something: a time to come, or a rate learned and not forgotten."""


def _state(row: Row | None) -> BudgetState:
    if row is None:
        return BudgetState()
    return BudgetState(
        next_free=row["next_free"],
        next_free_tokens=row["next_free_tokens"],
        learned_rate=row["learned_rate"],
        decreased_at=row["decreased_at"],
        blocked_until=row["blocked_until"],
    )


class Budgets:
    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.clock = clock

    async def states(self) -> dict[str, BudgetState]:
        """Every budget that says anything now (one query: a process's cache of which are
        limited); any other is as if it had no row."""
        now = self.clock()
        async with self.db.read() as transaction:
            rows = await transaction.all(
                f"SELECT deployment, {COLUMNS} FROM upstream_budgets WHERE {LIVE}",
                now=now,
                forgotten=now - pacing.FORGET_AFTER_SECONDS,
            )
        return {row["deployment"]: _state(row) for row in rows}

    async def forget_idle(self) -> int:
        """Delete the budgets, and the projects' turns, that say nothing any more; how many."""
        now = self.clock()
        async with self.db.write() as transaction:
            budgets = await transaction.run(
                f"DELETE FROM upstream_budgets WHERE NOT ({LIVE})", now=now, forgotten=now - pacing.FORGET_AFTER_SECONDS
            )
            turns = await transaction.run("DELETE FROM upstream_queues WHERE next_at < :now", now=now)
        return budgets + turns

    async def reserve(
        self, deployment: str, limits: Limits, lane: Lane, project: str, *, returning: bool = False, spread: float = 0.0
    ) -> Decision:
        async def decide(transaction: Transaction, state: BudgetState, now: float) -> tuple[Decision, BudgetState]:
            queued = (
                await transaction.value(
                    "SELECT next_at FROM upstream_queues WHERE deployment = :d AND lane = :lane AND project = :project",
                    d=deployment,
                    lane=lane,
                    project=project,
                )
                or 0.0
            )
            decision, after, queued_after = pacing.reserve(
                state, limits, now, lane, queued, returning=returning, spread=spread
            )
            if queued_after != queued:
                await transaction.run(
                    "INSERT INTO upstream_queues (deployment, lane, project, next_at) "
                    "VALUES (:d, :lane, :project, :at) ON CONFLICT (deployment, lane, project) "
                    "DO UPDATE SET next_at = excluded.next_at",
                    d=deployment,
                    lane=lane,
                    project=project,
                    at=queued_after,
                )
            return decision, after

        return await self._change(deployment, decide)

    async def rate_limited(
        self,
        deployment: str,
        limits: Limits,
        *,
        retry_after: float | None,
        sending_rate: float | None,
        provider_rate: float | None,
    ) -> BudgetState:
        async def cut(_: Transaction, state: BudgetState, now: float) -> tuple[BudgetState, BudgetState]:
            after = pacing.rate_limited(
                state, limits, now, retry_after=retry_after, sending_rate=sending_rate, provider_rate=provider_rate
            )
            return after, after

        return await self._change(deployment, cut)

    async def exhausted(self, deployment: str, seconds: float) -> BudgetState:
        """The provider said no request is left for `seconds` (a successful answer's headers)."""

        async def block(_: Transaction, state: BudgetState, now: float) -> tuple[BudgetState, BudgetState]:
            after = pacing.blocked(state, now, seconds)
            return after, after

        return await self._change(deployment, block)

    async def charge_tokens(self, deployment: str, limits: Limits, tokens: int) -> None:
        async def charge(_: Transaction, state: BudgetState, now: float) -> tuple[None, BudgetState]:
            return None, pacing.charge_tokens(state, limits, now, tokens)

        await self._change(deployment, charge)

    async def _change(
        self, deployment: str, change: Callable[[Transaction, BudgetState, float], Awaitable[tuple[T, BudgetState]]]
    ) -> T:
        """Apply `change` (the transaction, the budget as it is, now) -> (its result, the budget
        after) to one deployment's budget, holding its row."""
        async with self.db.write() as transaction:
            # Take the row (made if new) before reading it: on PostgreSQL the update holds its
            # lock to the end of the transaction; SQLite's write transaction holds the file.
            await transaction.run(
                f"INSERT INTO upstream_budgets (deployment, {COLUMNS}) VALUES (:d, 0, 0, NULL, 0, 0) "
                "ON CONFLICT (deployment) DO UPDATE SET next_free = upstream_budgets.next_free",
                d=deployment,
            )
            row = await transaction.one(f"SELECT {COLUMNS} FROM upstream_budgets WHERE deployment = :d", d=deployment)
            before = _state(row)
            result, after = await change(transaction, before, self.clock())
            if after != before:
                await transaction.run(
                    "UPDATE upstream_budgets SET next_free = :next_free, next_free_tokens = :next_free_tokens, "
                    "learned_rate = :learned_rate, decreased_at = :decreased_at, blocked_until = :blocked_until "
                    "WHERE deployment = :d",
                    d=deployment,
                    next_free=after.next_free,
                    next_free_tokens=after.next_free_tokens,
                    learned_rate=after.learned_rate,
                    decreased_at=after.decreased_at,
                    blocked_until=after.blocked_until,
                )
            return result
