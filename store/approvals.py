"""Approval requests and decisions in the store: the one home of their rows.

- `approval_decisions`: every answer to a request, whoever gave it (the client's follow-up,
  the approvals route, the inbox), at most one per request: a second is
  `ApprovalAlreadyAnsweredError`, so no approved call ever runs twice.
- `approval_waits`: the requests background responses wait for now, with when they were
  asked (microseconds). The workflow records a wait as it begins (`record_waits`); a decision
  (`decide`) or the response's end (`settle_in`) removes it. The approvals-waiting gauge and
  the time to a decision read them.
- `open_approvals`: requests that ended responses leave open. A non-background response that
  needs an approval ends with the request (as OpenAI's do); so does a background response
  whose wait timed out. Only the client's follow-up (a new response continuing this one) can
  run the call: it brings the MCP tool and its credentials again. A person may still decide
  such a request in the inbox: the decision is kept (`keep`, in `approval_decisions` with its
  reason) and the first follow-up that leaves the request unanswered applies it, as though it
  had carried the answer itself. A request a follow-up answered, closed or applied is closed
  (`closed_by`); removing that follow-up opens it again, as removing an answer makes a request
  answerable again.
- The pending list (`GET /v1/approvals?status=pending`, the inbox): the requests a project's
  background responses wait for now and those its ended responses left open that nobody has
  decided yet, in one order: oldest first, by (asked at, id).

The `..._in` methods work inside a transaction of the caller's (the response's creation,
end or removal in `store/repository.py`), so those stay one transaction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from models.errors import ApprovalAlreadyAnsweredError
from models.responses import Response
from store.codec import dumps, loads
from store.database import Conflict, Database, Transaction

OPEN_AFTER = ("completed", "incomplete")
"""The statuses a response can end in with a request a follow-up may still answer (a failed or
cancelled response's requests are not asked of anyone)."""


@dataclass(frozen=True)
class KeptDecision:
    """A decision made on an open request, for the follow-up that applies it."""

    approve: bool
    reason: str | None
    decided_by: str | None


_PENDING = (
    "SELECT w.approval_request_id AS request_id, w.response_id AS response_id, w.asked_at AS asked_at, "
    "'now' AS applies FROM approval_waits w JOIN responses r ON r.id = w.response_id "
    "WHERE r.project = :project AND r.status = 'in_progress' {where_wait} "
    "UNION ALL "
    "SELECT o.approval_request_id, o.response_id, o.asked_at, 'on_follow_up' FROM open_approvals o "
    "JOIN responses r ON r.id = o.response_id "
    "LEFT JOIN approval_decisions d ON d.approval_request_id = o.approval_request_id "
    "WHERE r.project = :project AND o.closed_by IS NULL AND d.approval_request_id IS NULL {where_open} "
)


@dataclass(frozen=True)
class PendingApproval:
    request_id: str
    response_id: str
    asked_at: int
    """Microseconds since the epoch."""
    applies: Literal["now", "on_follow_up"]
    """When a decision takes effect: at once (the response waits), or when the client's
    follow-up continues the ended response (`open_approvals`)."""


class Approvals:
    def __init__(self, db: Database) -> None:
        self.db = db

    # ---- decisions -----------------------------------------------------------------------

    @staticmethod
    async def answer_in(
        transaction: Transaction, response_id: str, answers: dict[str, bool], *, decided_by: str | None
    ) -> None:
        """A new response's own answers to requests (by id), kept as it is created.
        `ApprovalAlreadyAnsweredError` when any was answered already."""
        try:
            await transaction.run_many(
                "INSERT INTO approval_decisions (approval_request_id, response_id, approve, decided_by) "
                "VALUES (:request_id, :response_id, :approve, :decided_by)",
                [
                    {"request_id": request_id, "response_id": response_id, "approve": approve, "decided_by": decided_by}
                    for request_id, approve in answers.items()
                ],
            )
        except Conflict:
            raise ApprovalAlreadyAnsweredError(sorted(answers)) from None

    async def answered(self, approval_request_ids: list[str]) -> dict[str, str]:
        """Which of these approval requests are answered already: request id -> the response
        that answered it."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT approval_request_id, response_id FROM approval_decisions WHERE approval_request_id IN (:ids)",
                ids=approval_request_ids,
            )
        return {row["approval_request_id"]: row["response_id"] for row in rows}

    async def decide(
        self, approval_request_id: str, response_id: str, approve: bool, decided_by: str | None = None
    ) -> float | None:
        """Keep the decision on a request the response waits for; returns how long it was
        waited for (seconds), when the response was waiting for it."""
        try:
            async with self.db.write() as transaction:
                await transaction.run(
                    "INSERT INTO approval_decisions (approval_request_id, response_id, approve, decided_by) "
                    "VALUES (:request_id, :response_id, :approve, :decided_by)",
                    request_id=approval_request_id,
                    response_id=response_id,
                    approve=approve,
                    decided_by=decided_by,
                )
                asked_at = await transaction.value(
                    "SELECT asked_at FROM approval_waits WHERE approval_request_id = :id", id=approval_request_id
                )
                await transaction.run(
                    "DELETE FROM approval_waits WHERE approval_request_id = :id", id=approval_request_id
                )
        except Conflict:
            raise ApprovalAlreadyAnsweredError([approval_request_id]) from None
        return None if asked_at is None else _seconds_since(asked_at)

    @staticmethod
    async def forget_in(transaction: Transaction, response_id: str) -> None:
        """The response is removed: the decisions it made and those made on its requests go,
        and what it closed is open again."""
        await transaction.run(
            "DELETE FROM approval_decisions WHERE response_id = :id OR approval_request_id IN "
            "(SELECT item_id FROM output_items WHERE response_id = :id)",
            id=response_id,
        )
        await transaction.run("UPDATE open_approvals SET closed_by = NULL WHERE closed_by = :id", id=response_id)

    # ---- what background responses wait for now -----------------------------------------

    async def record_waits(self, response_id: str, approval_request_ids: list[str]) -> int:
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

    async def waiting(self) -> tuple[int, float]:
        """How many approval requests responses wait for, and for how long the oldest has
        waited (seconds; 0 with none)."""
        async with self.db.read() as transaction:
            row = await transaction.one("SELECT COUNT(*) AS waiting, MIN(asked_at) AS oldest FROM approval_waits")
        if not row or not row["waiting"]:
            return 0, 0.0
        return int(row["waiting"]), _seconds_since(row["oldest"])

    # ---- at a response's end: open what it leaves ----------------------------------------

    @classmethod
    async def settle_in(cls, transaction: Transaction, response: Response) -> None:
        """The response ends: it waits for nothing any more, and a stored one leaves open the
        requests it ended with (`open_in`)."""
        if response.store:
            await cls.open_in(transaction, response)
        await transaction.run("DELETE FROM approval_waits WHERE response_id = :id", id=response.id)

    @staticmethod
    async def open_in(transaction: Transaction, response: Response) -> None:
        """At a stored response's end: the approval requests it ended with (those after the
        model's last message) that were neither run nor answered stay open, since they were
        asked (a background wait's start, or now). A request a background response had decided
        in place is followed by what the model said next."""
        if response.status not in OPEN_AFTER:
            return
        messages = [index for index, item in enumerate(response.output) if item.type == "message"]
        ended_with = response.output[messages[-1] + 1 :] if messages else response.output
        run = {item.approval_request_id for item in ended_with if item.type == "mcp_call"}
        candidates = [item.id for item in ended_with if item.type == "mcp_approval_request" and item.id not in run]
        if not candidates:
            return
        answered = {
            row["approval_request_id"]
            for row in await transaction.all(
                "SELECT approval_request_id FROM approval_decisions WHERE approval_request_id IN (:ids)", ids=candidates
            )
        }
        asked = {
            row["approval_request_id"]: row["asked_at"]
            for row in await transaction.all(
                "SELECT approval_request_id, asked_at FROM approval_waits WHERE approval_request_id IN (:ids)",
                ids=candidates,
            )
        }
        now = time.time_ns() // 1000
        rows = [
            {"id": request_id, "response_id": response.id, "asked_at": asked.get(request_id, now)}
            for request_id in candidates
            if request_id not in answered
        ]
        if rows:
            await transaction.run_many(
                "INSERT INTO open_approvals (approval_request_id, response_id, asked_at) "
                "VALUES (:id, :response_id, :asked_at) ON CONFLICT (approval_request_id) DO NOTHING",
                rows,
            )

    @staticmethod
    async def close_in(transaction: Transaction, request_ids: list[str], *, by: str, applied: list[str]) -> None:
        """The follow-up `by` answered or closed these requests. `applied`: those whose kept
        decision it applies, which must all still be open, so that no two follow-ups ever run
        one approved call (`ApprovalAlreadyAnsweredError` for the one that comes second)."""
        if applied:
            closed = await transaction.run(
                "UPDATE open_approvals SET closed_by = :by WHERE approval_request_id IN (:ids) AND closed_by IS NULL",
                by=by,
                ids=applied,
            )
            if closed != len(applied):
                raise ApprovalAlreadyAnsweredError(sorted(applied))
        others = [request_id for request_id in request_ids if request_id not in applied]
        if others:
            await transaction.run(
                "UPDATE open_approvals SET closed_by = :by WHERE approval_request_id IN (:ids) AND closed_by IS NULL",
                by=by,
                ids=others,
            )

    async def kept(self, request_ids: list[str]) -> dict[str, KeptDecision]:
        """The decisions kept for those of these requests that are still open."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT d.approval_request_id, d.approve, d.reason, d.decided_by FROM open_approvals o "
                "JOIN approval_decisions d ON d.approval_request_id = o.approval_request_id "
                "WHERE o.approval_request_id IN (:ids) AND o.closed_by IS NULL",
                ids=request_ids,
            )
        return {
            row["approval_request_id"]: KeptDecision(bool(row["approve"]), loads(row["reason"]), row["decided_by"])
            for row in rows
        }

    async def undecided(self, response_id: str) -> bool:
        """Whether the ended response left a request open that nobody has decided."""
        async with self.db.read() as transaction:
            found = await transaction.value(
                "SELECT o.approval_request_id FROM open_approvals o LEFT JOIN approval_decisions d "
                "ON d.approval_request_id = o.approval_request_id "
                "WHERE o.response_id = :id AND o.closed_by IS NULL AND d.approval_request_id IS NULL LIMIT 1",
                id=response_id,
            )
        return found is not None

    async def keep(
        self, response_id: str, approval_request_id: str, *, approve: bool, reason: str | None, decided_by: str | None
    ) -> float | None:
        """Keep a decision on an open request of the ended response, for its follow-up. Returns
        how long the request had waited (seconds), or None when the response has no such open
        request (never asked, or a follow-up closed it). `ApprovalAlreadyAnsweredError` when
        it was decided already: here, or while the response waited for it (then the answer is
        the same whether the response has ended since or not)."""
        try:
            async with self.db.write() as transaction:
                asked_at = await transaction.value(
                    "SELECT asked_at FROM open_approvals WHERE approval_request_id = :id "
                    "AND response_id = :response_id AND closed_by IS NULL",
                    id=approval_request_id,
                    response_id=response_id,
                )
                if asked_at is None:
                    if await transaction.value(
                        "SELECT 1 FROM approval_decisions WHERE approval_request_id = :id "
                        "AND response_id = :response_id",
                        id=approval_request_id,
                        response_id=response_id,
                    ):
                        raise ApprovalAlreadyAnsweredError([approval_request_id])
                    return None
                await transaction.run(
                    "INSERT INTO approval_decisions (approval_request_id, response_id, approve, decided_by, reason) "
                    "VALUES (:id, :response_id, :approve, :decided_by, :reason)",
                    id=approval_request_id,
                    response_id=response_id,
                    approve=approve,
                    decided_by=decided_by,
                    reason=dumps(reason),
                )  # as JSON text: any string, a NUL too, goes into any store
        except Conflict:
            raise ApprovalAlreadyAnsweredError([approval_request_id]) from None
        return _seconds_since(asked_at)

    # ---- the pending list ------------------------------------------------------------------

    async def page(self, project: str, *, after: tuple[int, str] | None, limit: int) -> list[PendingApproval]:
        """The project's pending requests from after the (asked at, id) cursor."""
        later = "AND ({t}.asked_at > :asked_at OR ({t}.asked_at = :asked_at AND {t}.approval_request_id > :id))"
        query = _PENDING.format(where_wait=later.format(t="w"), where_open=later.format(t="o"))
        async with self.db.read() as transaction:
            rows = await transaction.all(
                query + "ORDER BY asked_at, request_id LIMIT :limit",
                project=project,
                asked_at=after[0] if after else -1,
                id=after[1] if after else "",
                limit=limit,
            )
        return [PendingApproval(row["request_id"], row["response_id"], row["asked_at"], row["applies"]) for row in rows]

    async def cursor(self, project: str, approval_request_id: str) -> tuple[int, str] | None:
        """(asked at, id) of a pending request of the project: where a page starts after it."""
        where = "AND {t}.approval_request_id = :id"
        query = _PENDING.format(where_wait=where.format(t="w"), where_open=where.format(t="o"))
        async with self.db.read() as transaction:
            asked_at = await transaction.value(
                f"SELECT asked_at FROM ({query}) pending", project=project, id=approval_request_id
            )
        return None if asked_at is None else (asked_at, approval_request_id)


def _seconds_since(asked_at: int) -> float:
    return max(0.0, time.time() - asked_at / 1_000_000)
