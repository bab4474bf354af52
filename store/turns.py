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

from store.chat_contexts import ContextBase, base_in, context_in, put_in
from store.codec import dumps, loads
from store.conversations import Conversations
from store.database import Database, Transaction
from store.notifier import Notifier

TURN = "response_id = :response_id AND turn = :turn"


class TurnLost(Exception):
    """The claim on a turn passed to another execution: this one's writes are refused."""


@dataclass(frozen=True)
class Fence:
    """Writes on behalf of one claim of one turn."""

    response_id: str
    turn: int
    holder: str

    @property
    def key(self) -> dict[str, Any]:
        return {"response_id": self.response_id, "turn": self.turn}

    async def check(self, transaction: Transaction) -> None:
        holder = await transaction.value(f"SELECT holder FROM inference_claims WHERE {TURN}", **self.key)
        if holder != self.holder:
            raise TurnLost(f"turn {self.turn} of response {self.response_id} is claimed by another execution")


@dataclass(frozen=True)
class TurnStart:
    """What claiming a turn found: its recorded result, a cancel, a live claim of another
    execution (`held`), or the claim taken, with what the call continues from."""

    recorded: dict[str, Any] | None = None
    cancelled: bool = False
    """The client has cancelled the response."""
    held: bool = False
    failures: int = 0
    """Attempts of this turn's call that failed before, in any execution."""
    last_error: dict[str, Any] | None = None
    """The last of them: {"type", "message", "non_retryable"}."""
    context: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    """This response's input items (a first turn only)."""
    conversation: list[dict[str, Any]] = field(default_factory=list)
    """The items of the response's conversation, which every turn starts from."""
    base: ContextBase = ContextBase()
    """What the response's own chat context follows (`store/chat_contexts.py`)."""


def _now_us() -> int:
    return time.time_ns() // 1000


async def _nothing_to_poll(_response_ids: list[str]) -> list[str]:
    return []  # a waiter asks the store again on its own timer: the wake-up only hastens it


class Turns:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.settled = Notifier(_nothing_to_poll, 1.0, channel=db.wakeups, topic="turns")
        """Wakes those waiting on a claim held elsewhere when it is given up or its result is
        recorded with `announce` (by an API process's own early call, which a worker's
        execution of the turn waits for: `activities/early_calls.py`): they ask again at once
        rather than at their next try. Other turns are not announced: nobody waits for them
        but a repeated execution, which asks again on its own (a NOTIFY a turn would cost)."""

    async def claim(
        self,
        fence: Fence,
        previous_response_id: str | None,
        conversation_id: str | None,
        lease_seconds: float,
        *,
        first: bool | None = None,
    ) -> TurnStart:
        """Claim a turn, in one transaction with reading what it starts from: the items of the
        response's conversation, then the response's own chat context after its first turn;
        before it (`first`: no turn recorded yet; by default, turn 0), the previous response's
        and this response's input items."""
        response_id, turn = fence.response_id, fence.turn
        first = turn == 0 if first is None else first
        async with self.db.write() as transaction:
            recorded = await transaction.value(f"SELECT result FROM inference_results WHERE {TURN}", **fence.key)
            if recorded is not None:
                return TurnStart(recorded=loads(recorded))
            if await transaction.value("SELECT 1 FROM cancel_requests WHERE response_id = :id", id=response_id):
                return TurnStart(cancelled=True)
            claim = await transaction.one(
                "INSERT INTO inference_claims (response_id, turn, holder, expires_at, failures) "
                "VALUES (:response_id, :turn, :holder, :expires_at, 0) "
                "ON CONFLICT (response_id, turn) DO UPDATE SET holder = excluded.holder, "
                "expires_at = excluded.expires_at "
                "WHERE inference_claims.expires_at <= :now OR inference_claims.holder = excluded.holder "
                "RETURNING failures, last_error",
                **fence.key,
                holder=fence.holder,
                now=_now_us(),
                expires_at=_now_us() + int(lease_seconds * 1e6),
            )
            if claim is None:
                return TurnStart(held=True)
            context_of = previous_response_id if first else response_id
            context = []
            if context_of is not None:
                context = await context_in(transaction, context_of) or []
            if not first:
                base = await base_in(transaction, response_id)
            else:
                base = ContextBase(previous_response_id, len(context)) if previous_response_id else ContextBase()
            items = []
            if first:
                rows = await transaction.all(
                    "SELECT data FROM input_items WHERE response_id = :id ORDER BY position", id=response_id
                )
                items = [loads(row["data"]) for row in rows]
            conversation = await Conversations.items_in(transaction, conversation_id) if conversation_id else []
            return TurnStart(
                failures=claim["failures"],
                last_error=loads(claim["last_error"]),
                context=context,
                items=items,
                conversation=conversation,
                base=base,
            )

    async def renew(self, fence: Fence, lease_seconds: float) -> bool:
        """Extend a claim this execution still holds; False when it holds it no more."""
        async with self.db.write() as transaction:
            renewed = await transaction.run(
                f"UPDATE inference_claims SET expires_at = :expires_at WHERE {TURN} AND holder = :holder",
                **fence.key,
                holder=fence.holder,
                expires_at=_now_us() + int(lease_seconds * 1e6),
            )
        return renewed > 0

    async def release(self, fence: Fence, error: dict[str, Any] | None, *, announce: bool = False) -> None:
        """Give a claim up, so the next attempt need not wait for its lease; `error`: the
        attempt failed ({"type", "message", "non_retryable"}), and counts against the turn's
        retry budget; `announce`: wake those waiting for it in other processes (`settled`)."""
        failed = ", failures = failures + 1, last_error = :error" if error is not None else ""
        async with self.db.write() as transaction:
            await transaction.run(
                f"UPDATE inference_claims SET expires_at = 0{failed} WHERE {TURN} AND holder = :holder",
                **fence.key,
                holder=fence.holder,
                **({"error": dumps(error)} if error is not None else {}),
            )
        if announce:
            self.settled.notify(fence.response_id)

    async def record(
        self,
        fence: Fence,
        messages: list[dict[str, Any]],
        result: dict[str, Any],
        *,
        base: ContextBase = ContextBase(),
        announce: bool = False,
    ) -> None:
        """The call's chat context (kept as its own messages after `base`'s) and result,
        written together, while the claim is still this execution's (raises `TurnLost`
        otherwise); the claim ends with it. `announce`: as `release`'s."""
        async with self.db.write() as transaction:
            released = await transaction.run(
                f"DELETE FROM inference_claims WHERE {TURN} AND holder = :holder", **fence.key, holder=fence.holder
            )
            if released == 0:
                raise TurnLost(f"turn {fence.turn} of response {fence.response_id} is claimed by another execution")
            await put_in(transaction, fence.response_id, messages, base)
            await transaction.run(
                "INSERT INTO inference_results (response_id, turn, result) VALUES (:response_id, :turn, :result)",
                **fence.key,
                result=dumps(result),
            )
        if announce:
            self.settled.notify(fence.response_id)
