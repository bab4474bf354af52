"""Inference turns in the store: who is making a turn's call (a claim with a lease), what the
call returned (kept with the chat context it produced), and what a turn starts from.

A turn's inference call is made once. The execution that starts a turn claims it and renews
the claim while the call runs. Another execution of the same turn (its workflow task timed
out on a loaded worker and ran again elsewhere) finds either the recorded result, which it
returns as its own, or a live claim, and waits. A claim whose lease ran out (its holder died
or stalled) is taken over, and the stale holder's writes are refused from then on: its
event-log appends (`Fence`) and its result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, delete, insert, select, update

from store.database import Database, Transaction
from store.rows import put_row
from store.schema import cancel_requests, chat_contexts, inference_claims, inference_results, input_items


class TurnLost(Exception):
    """The claim on a turn passed to another execution: this one's writes are refused."""


@dataclass(frozen=True)
class Fence:
    """Writes on behalf of one claim of one turn."""

    response_id: str
    turn: int
    holder: str

    async def check(self, transaction: Transaction) -> None:
        holder = (await transaction.execute(select(inference_claims.c.holder).where(_turn_of(self)))).scalar_one_or_none()
        if holder != self.holder:
            raise TurnLost(f"turn {self.turn} of response {self.response_id} is claimed by another execution")


@dataclass(frozen=True)
class TurnStart:
    """What claiming a turn found: its recorded result, a live claim of another execution
    (`held`), or the claim taken, with the chat context the call continues."""

    recorded: dict[str, Any] | None = None
    held: bool = False
    cancelled: bool = False
    """The client has cancelled the response."""
    failures: int = 0
    """Attempts of this turn's call that failed before, in any execution."""
    last_error: dict[str, Any] | None = None
    """The last of them: {"type", "message", "non_retryable"}."""
    context: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    """This response's input items (a first turn only)."""


def _turn_of(fence: "Fence"):  # noqa: ANN202 - a SQL condition
    return and_(inference_claims.c.response_id == fence.response_id, inference_claims.c.turn == fence.turn)


def _now_us() -> int:
    return time.time_ns() // 1000


class Turns:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def claim(
        self, fence: Fence, previous_response_id: str | None, lease_seconds: float
    ) -> TurnStart:
        """Claim a turn, in one transaction with reading what it starts from: the response's
        own chat context after its first turn; before it, the previous response's and this
        response's input items."""
        response_id, turn = fence.response_id, fence.turn
        async with self.db.write() as transaction:
            recorded = (
                await transaction.execute(
                    select(inference_results.c.result).where(
                        and_(inference_results.c.response_id == response_id, inference_results.c.turn == turn)
                    )
                )
            ).scalar_one_or_none()
            if recorded is not None:
                return TurnStart(recorded=recorded)
            cancelled = (await transaction.execute(
                select(cancel_requests.c.response_id).where(cancel_requests.c.response_id == response_id)
            )).first() is not None
            if cancelled:
                return TurnStart(cancelled=True)
            taken = await self._take(transaction, fence, lease_seconds)
            if taken is None:
                return TurnStart(held=True)
            failures, last_error = taken
            context_of = response_id if turn > 0 else previous_response_id
            context: list[dict[str, Any]] = []
            if context_of is not None:
                context = (
                    await transaction.execute(
                        select(chat_contexts.c.messages).where(chat_contexts.c.response_id == context_of)
                    )
                ).scalar_one_or_none() or []
            items: list[dict[str, Any]] = []
            if turn == 0:
                rows = await transaction.execute(
                    select(input_items.c.data).where(input_items.c.response_id == response_id)
                    .order_by(input_items.c.position)
                )
                items = list(rows.scalars().all())
            return TurnStart(failures=failures, last_error=last_error, context=context, items=items)

    @staticmethod
    async def _take(
        transaction: Transaction, fence: Fence, lease_seconds: float
    ) -> tuple[int, dict[str, Any] | None] | None:
        """Take the claim unless another execution holds it live; returns the turn's failures
        so far and its last error, or None when it is held."""
        where = _turn_of(fence)
        current = (await transaction.execute(select(
            inference_claims.c.holder, inference_claims.c.expires_at, inference_claims.c.failures,
            inference_claims.c.last_error,
        ).where(where))).first()
        now = _now_us()
        expires_at = now + int(lease_seconds * 1_000_000)
        if current is None:
            await transaction.execute(insert(inference_claims).values(
                response_id=fence.response_id, turn=fence.turn, holder=fence.holder, expires_at=expires_at, failures=0))
            return 0, None
        if current.holder != fence.holder and current.expires_at > now:
            return None
        await transaction.execute(update(inference_claims).where(where).values(holder=fence.holder, expires_at=expires_at))
        return current.failures, current.last_error

    async def renew(self, fence: Fence, lease_seconds: float) -> bool:
        """Extend a claim this execution still holds; False when it holds it no more."""
        async with self.db.write() as transaction:
            renewed = await transaction.execute(
                update(inference_claims)
                .where(and_(_turn_of(fence), inference_claims.c.holder == fence.holder))
                .values(expires_at=_now_us() + int(lease_seconds * 1_000_000))
            )
            return renewed.rowcount > 0

    async def release(self, fence: Fence, error: dict[str, Any] | None) -> None:
        """Give a claim up, so the next attempt need not wait for its lease; `error`: the
        attempt failed ({"type", "message", "non_retryable"}), and counts against the turn's
        retry budget."""
        values: dict[str, Any] = {"expires_at": 0}
        if error is not None:
            values |= {"failures": inference_claims.c.failures + 1, "last_error": error}
        async with self.db.write() as transaction:
            await transaction.execute(
                update(inference_claims).where(and_(_turn_of(fence), inference_claims.c.holder == fence.holder))
                .values(**values)
            )

    async def record(self, fence: Fence, messages: list[dict[str, Any]], result: dict[str, Any]) -> None:
        """The call's chat context and result, written together, while the claim is still this
        execution's (raises `TurnLost` otherwise); the claim ends with it."""
        async with self.db.write() as transaction:
            await fence.check(transaction)
            await put_row(transaction, chat_contexts, fence.response_id, messages=messages)
            await transaction.execute(
                insert(inference_results).values(response_id=fence.response_id, turn=fence.turn, result=result)
            )
            await transaction.execute(delete(inference_claims).where(_turn_of(fence)))
