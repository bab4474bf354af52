"""Approval requests that ended responses leave open, and the decisions kept for them.

A non-background response that needs an approval ends with the request (as OpenAI's do); so
does a background response whose wait timed out. Only the client's follow-up (a new response
continuing this one) can run the call: it brings the MCP tool and its credentials again. A
person may still decide such a request in the approvals inbox: the decision is kept (in
`approval_decisions`, with its reason) and the first follow-up that leaves the request
unanswered applies it, as though it had carried the answer itself. A request a follow-up has
answered, closed or applied is closed (`closed_by`); removing that follow-up opens it again,
as removing an answer makes a request answerable again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

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


class OpenApprovals:
    def __init__(self, db: Database) -> None:
        self.db = db

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

    @staticmethod
    async def reopen_in(transaction: Transaction, follow_up_id: str) -> None:
        """The follow-up is gone: what it closed is open again."""
        await transaction.run("UPDATE open_approvals SET closed_by = NULL WHERE closed_by = :id", id=follow_up_id)

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
        it was decided already."""
        try:
            async with self.db.write() as transaction:
                asked_at = await transaction.value(
                    "SELECT asked_at FROM open_approvals WHERE approval_request_id = :id "
                    "AND response_id = :response_id AND closed_by IS NULL",
                    id=approval_request_id,
                    response_id=response_id,
                )
                if asked_at is None:
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
        return max(0.0, time.time() - asked_at / 1_000_000)
