"""Reads and writes of responses, input items and chat context. No business rules here."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from models.errors import ApprovalAlreadyAnsweredError, SecretsUnavailableError
from models.mcp import McpListing
from models.events import LifecycleEvent
from models.responses import TERMINAL_STATUSES, Response, ResponseStatus
from models.tools import McpSecrets
from store.database import Database, Transaction
from store.event_log import EventLog
from store.notifier import Notifier
from store.outcomes import Outcomes
from store.rows import put_row
from store.turns import Turns
from store.schema import (
    approval_decisions,
    cancel_requests,
    chat_contexts,
    events,
    inference_claims,
    inference_results,
    input_items,
    mcp_listings,
    mcp_secrets,
    responses,
)
from store.secret_box import SecretBox

Order = Literal["asc", "desc"]


@dataclass(frozen=True)
class Page:
    data: list[dict[str, Any]]
    has_more: bool

    def to_wire(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": self.data,
            "first_id": self.data[0]["id"] if self.data else "",
            "last_id": self.data[-1]["id"] if self.data else "",
            "has_more": self.has_more,
        }


class ResponseRepository:
    def __init__(
        self,
        db: Database,
        *,
        stream_poll_seconds: float = 0.02,
        cancel_poll_seconds: float = 0.25,
        secret_box: SecretBox | None = None,
    ) -> None:
        self.db = db
        self.secret_box = secret_box
        self.events = EventLog(db, stream_poll_seconds)
        self.turns = Turns(db)
        self.cancels = Notifier(self.cancel_requested, cancel_poll_seconds)
        """Running activities wait here for a client's cancel of their response."""
        self.outcomes = Outcomes()
        """Requests in this process wait here for the end of a response their worker runs."""

    # ---- responses -------------------------------------------------------------------

    async def create_response(
        self,
        response: Response,
        items: list[tuple[str, dict[str, Any]]],
        first_events: list[dict[str, Any]] | None = None,
        *,
        secrets: dict[str, McpSecrets] | None = None,
        decisions: dict[str, bool] | None = None,
    ) -> None:
        """The response as created, with its input items, first events, sealed MCP secrets (by
        server label) and answers to approval requests (by request id), in one transaction."""
        try:
            await self._create(response, items, first_events, secrets or {}, decisions or {})
        except IntegrityError as error:
            if decisions and "approval_decisions" in str(error):
                raise ApprovalAlreadyAnsweredError(sorted(decisions)) from None
            raise

    async def _create(
        self,
        response: Response,
        items: list[tuple[str, dict[str, Any]]],
        first_events: list[dict[str, Any]] | None,
        secrets: dict[str, McpSecrets],
        decisions: dict[str, bool],
    ) -> None:
        sealed = {label: self._seal(value) for label, value in secrets.items()}
        async with self.db.write() as transaction:
            await transaction.execute(
                insert(responses).values(
                    id=response.id,
                    created_at=response.created_at,
                    sort_key=time.time_ns() // 1000,
                    status=response.status,
                    stored=response.store,
                    previous_response_id=response.previous_response_id,
                    data=response.model_dump(mode="json", by_alias=True),
                )
            )
            if items:
                await transaction.execute(
                    insert(input_items),
                    [
                        {"response_id": response.id, "position": position, "item_id": item_id, "data": data}
                        for position, (item_id, data) in enumerate(items)
                    ],
                )
            if sealed:
                await transaction.execute(
                    insert(mcp_secrets),
                    [{"response_id": response.id, "server_label": label, "sealed": value} for label, value in sealed.items()],
                )
            if decisions:
                await transaction.execute(
                    insert(approval_decisions),
                    [
                        {"approval_request_id": request_id, "response_id": response.id, "approve": approve}
                        for request_id, approve in decisions.items()
                    ],
                )
            if first_events:
                await self.events.append_in(transaction, response.id, first_events, new_log=True)

    async def get_response(self, response_id: str, *, include_unstored: bool = False) -> Response | None:
        query = select(responses.c.data).where(responses.c.id == response_id)
        if not include_unstored:
            query = query.where(responses.c.stored.is_(True))
        async with self.db.read() as transaction:
            data = (await transaction.execute(query)).scalar_one_or_none()
        return None if data is None else Response.model_validate(data)

    async def advance_status(self, response_id: str, status: ResponseStatus, *, with_event: bool) -> bool:
        """Move a running response to `status`, with the event that announces it; False when
        it has that status already. A response that has ended keeps its end: a step that runs
        again never takes it back. Raises LookupError when the response is not in the store."""
        async with self.db.write() as transaction:
            current = (
                await transaction.execute(select(responses.c.status, responses.c.data).where(responses.c.id == response_id))
            ).first()
            if current is None:
                raise LookupError(response_id)
            if current.status == status or current.status in TERMINAL_STATUSES:
                return False
            updated = Response.model_validate(current.data).model_copy(update={"status": status})
            await transaction.execute(
                update(responses).where(responses.c.id == response_id)
                .values(status=status, data=updated.model_dump(mode="json", by_alias=True))
            )
            if with_event:
                event = LifecycleEvent(type=f"response.{status}", response=updated).wire()
                await self.events.append_in(transaction, response_id, [event])
        if with_event:
            self.events.notifier.notify(response_id)
        return True

    async def finish(
        self,
        response: Response,
        event: dict[str, Any] | None,
        *,
        tool_messages: list[dict[str, Any]] | None = None,
        listings: list[McpListing] | None = None,
    ) -> Response | None:
        """Write a response's end in one transaction: the final response and its terminal
        event; for a stored response also what its chain needs (results of tools run after its
        last inference call join its chat context; its MCP listings), and its MCP secrets go.
        An unstored response is removed instead, all but the event log a stream still reads.

        The first end written stays: a finalize that runs again (its workflow task was retried
        after the first one wrote) changes nothing and gets the response as it was stored.
        Returns the response as it ends, or None when an unstored one already has."""
        response_id = response.id
        async with self.db.write() as transaction:
            current = (
                await transaction.execute(select(responses.c.status, responses.c.data).where(responses.c.id == response_id))
            ).first()
            if current is None:
                return None
            if current.status in TERMINAL_STATUSES:
                return Response.model_validate(current.data)
            if response.store:
                await transaction.execute(
                    update(responses).where(responses.c.id == response_id)
                    .values(status=response.status, data=response.model_dump(mode="json", by_alias=True))
                )
                if tool_messages:
                    context = (
                        await transaction.execute(
                            select(chat_contexts.c.messages).where(chat_contexts.c.response_id == response_id)
                        )
                    ).scalar_one_or_none() or []
                    await put_row(transaction, chat_contexts, response_id, messages=context + tool_messages)
                if listings:
                    await put_row(transaction, mcp_listings, response_id,
                                       listings=[listing.model_dump(mode="json") for listing in listings])
                await transaction.execute(delete(mcp_secrets).where(mcp_secrets.c.response_id == response_id))
            else:
                await self._delete_rows(transaction, response_id, keep_events=event is not None)
            if event is not None:
                await self.events.append_in(transaction, response_id, [event])
        if event is not None:
            self.events.notifier.notify(response_id)
        return response

    async def purge(self, response_id: str, *, keep_events: bool = False) -> bool:
        """Remove every row of a response (but its event log, with `keep_events`, for a
        stream still being read). True when the response existed."""
        async with self.db.write() as transaction:
            return await self._delete_rows(transaction, response_id, keep_events=keep_events)

    @staticmethod
    async def _delete_rows(transaction: Transaction, response_id: str, *, keep_events: bool) -> bool:
        removed = await transaction.execute(delete(responses).where(responses.c.id == response_id))
        for table in (input_items, chat_contexts, inference_results, inference_claims, cancel_requests, mcp_secrets,
                      mcp_listings,
                      *(() if keep_events else (events,))):
            await transaction.execute(delete(table).where(table.c.response_id == response_id))
        return removed.rowcount > 0

    async def running_created_between(self, start: float, end: float) -> list[Response]:
        """Responses (stored or not) still queued or in progress, created in [start, end)
        (Unix seconds)."""
        query = (
            select(responses.c.data)
            .where(responses.c.status.in_(("queued", "in_progress")))
            .where(responses.c.sort_key >= int(start * 1_000_000))
            .where(responses.c.sort_key < int(end * 1_000_000))
            .order_by(responses.c.sort_key)
        )
        async with self.db.read() as transaction:
            rows = (await transaction.execute(query)).scalars().all()
        return [Response.model_validate(data) for data in rows]

    async def list_responses(self, *, after: str | None, limit: int, order: Order) -> Page:
        query = select(responses.c.data).where(responses.c.stored.is_(True))
        key = (responses.c.sort_key, responses.c.id)
        if after is not None:
            cursor = await self._response_cursor(after)
            query = query.where(_beyond(key, cursor, order))
        ordering = [column.asc() if order == "asc" else column.desc() for column in key]
        async with self.db.read() as transaction:
            rows = (await transaction.execute(query.order_by(*ordering).limit(limit + 1))).scalars().all()
        return Page(data=list(rows[:limit]), has_more=len(rows) > limit)

    async def _response_cursor(self, response_id: str) -> tuple[int, str]:
        async with self.db.read() as transaction:
            sort_key = (
                await transaction.execute(select(responses.c.sort_key).where(responses.c.id == response_id))
            ).scalar_one_or_none()
        if sort_key is None:
            raise LookupError(response_id)
        return sort_key, response_id

    # ---- cancel requests -------------------------------------------------------------

    async def request_cancel(self, response_id: str) -> None:
        """Record that the client cancelled the response (idempotent) and wake local watchers."""
        async with self.db.write() as transaction:
            known = await transaction.execute(
                select(cancel_requests.c.response_id).where(cancel_requests.c.response_id == response_id)
            )
            if known.first() is None:
                await transaction.execute(
                    insert(cancel_requests).values(response_id=response_id, requested_at=time.time_ns() // 1000)
                )
        self.cancels.notify(response_id)

    async def cancel_requested(self, response_ids: list[str]) -> set[str]:
        """Which of these responses a client has cancelled."""
        async with self.db.read() as transaction:
            rows = await transaction.execute(
                select(cancel_requests.c.response_id).where(cancel_requests.c.response_id.in_(response_ids))
            )
            return set(rows.scalars().all())

    # ---- input items -----------------------------------------------------------------

    async def list_input_items(
        self, response_id: str, *, after: str | None, before: str | None, limit: int, order: Order
    ) -> Page:
        query = select(input_items.c.data).where(input_items.c.response_id == response_id)
        for cursor_id, direction in ((after, order), (before, _flip(order))):
            if cursor_id is not None:
                position = await self._item_position(response_id, cursor_id)
                query = query.where(
                    input_items.c.position > position if direction == "asc" else input_items.c.position < position
                )
        ordering = input_items.c.position.asc() if order == "asc" else input_items.c.position.desc()
        async with self.db.read() as transaction:
            rows = (await transaction.execute(query.order_by(ordering).limit(limit + 1))).scalars().all()
        return Page(data=list(rows[:limit]), has_more=len(rows) > limit)

    async def _item_position(self, response_id: str, item_id: str) -> int:
        async with self.db.read() as transaction:
            position = (
                await transaction.execute(
                    select(input_items.c.position).where(
                        and_(input_items.c.response_id == response_id, input_items.c.item_id == item_id)
                    )
                )
            ).scalar_one_or_none()
        if position is None:
            raise LookupError(item_id)
        return position

    # ---- chat context ----------------------------------------------------------------

    async def chat_context(self, response_id: str) -> list[dict[str, Any]] | None:
        async with self.db.read() as transaction:
            return (
                await transaction.execute(
                    select(chat_contexts.c.messages).where(chat_contexts.c.response_id == response_id)
                )
            ).scalar_one_or_none()

    # ---- MCP: secrets, listings, approval decisions ---------------------------------------

    def _seal(self, secrets: McpSecrets) -> str:
        if self.secret_box is None:
            raise SecretsUnavailableError("no SECRETS_KEY is configured, so MCP secrets cannot be kept")
        return self.secret_box.seal(secrets)

    async def mcp_secrets(self, response_id: str, server_label: str) -> McpSecrets | None:
        async with self.db.read() as transaction:
            sealed = (
                await transaction.execute(
                    select(mcp_secrets.c.sealed).where(
                        and_(mcp_secrets.c.response_id == response_id, mcp_secrets.c.server_label == server_label)
                    )
                )
            ).scalar_one_or_none()
        if sealed is None:
            return None
        if self.secret_box is None:
            raise SecretsUnavailableError("no SECRETS_KEY is configured, so MCP secrets cannot be opened")
        return self.secret_box.open(sealed)

    async def listings(self, response_id: str) -> list[McpListing]:
        async with self.db.read() as transaction:
            saved = (
                await transaction.execute(select(mcp_listings.c.listings).where(mcp_listings.c.response_id == response_id))
            ).scalar_one_or_none()
        return [McpListing.model_validate(listing) for listing in saved or []]

    async def answered(self, approval_request_ids: list[str]) -> dict[str, str]:
        """Which of these approval requests are answered already: request id -> the response
        that answered it."""
        async with self.db.read() as transaction:
            rows = await transaction.execute(
                select(approval_decisions.c.approval_request_id, approval_decisions.c.response_id).where(
                    approval_decisions.c.approval_request_id.in_(approval_request_ids)
                )
            )
            return dict(rows.all())

    async def record_decision(self, approval_request_id: str, response_id: str, approve: bool) -> None:
        try:
            async with self.db.write() as transaction:
                await transaction.execute(
                    insert(approval_decisions).values(
                        approval_request_id=approval_request_id, response_id=response_id, approve=approve
                    )
                )
        except IntegrityError:
            raise ApprovalAlreadyAnsweredError([approval_request_id]) from None

    async def ping(self) -> None:
        async with self.db.read() as transaction:
            await transaction.execute(select(func.count()).select_from(select(responses.c.id).limit(1).subquery()))


def _flip(order: Order) -> Order:
    return "desc" if order == "asc" else "asc"


def _beyond(key: tuple, cursor: tuple[int, str], order: Order):
    sort_key, identifier = key
    if order == "asc":
        return or_(sort_key > cursor[0], and_(sort_key == cursor[0], identifier > cursor[1]))
    return or_(sort_key < cursor[0], and_(sort_key == cursor[0], identifier < cursor[1]))
