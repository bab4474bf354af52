"""The approvals inbox's list (`GET /v1/approvals?status=pending`): the requests a project's
background responses wait for now (`approval_waits`), and those its ended responses left open
that nobody has decided yet (`open_approvals`), in one order: oldest first, by (asked at, id)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from store.database import Database

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
    follow-up continues the ended response (`store/open_approvals.py`)."""


class PendingApprovals:
    def __init__(self, db: Database) -> None:
        self.db = db

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
