"""Reads and writes of responses, input items and chat context. No business rules here."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Table, and_, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from models.errors import ApprovalAlreadyAnsweredError, SecretsUnavailableError
from models.mcp import McpListing
from models.responses import Response
from models.tools import McpSecrets
from store.database import write_transaction
from store.event_log import EventLog
from store.notifier import Notifier
from store.schema import (
    approval_decisions,
    cancel_requests,
    chat_contexts,
    events,
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
        engine: AsyncEngine,
        *,
        stream_poll_seconds: float = 0.02,
        cancel_poll_seconds: float = 0.25,
        secret_box: SecretBox | None = None,
    ) -> None:
        self.engine = engine
        self.secret_box = secret_box
        self.events = EventLog(engine, stream_poll_seconds)
        self.cancels = Notifier(self.cancel_requested, cancel_poll_seconds)
        """Running activities wait here for a client's cancel of their response."""

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
        async with write_transaction(self.engine) as connection:
            await connection.execute(
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
                await connection.execute(
                    insert(input_items),
                    [
                        {"response_id": response.id, "position": position, "item_id": item_id, "data": data}
                        for position, (item_id, data) in enumerate(items)
                    ],
                )
            if sealed:
                await connection.execute(
                    insert(mcp_secrets),
                    [{"response_id": response.id, "server_label": label, "sealed": value} for label, value in sealed.items()],
                )
            if decisions:
                await connection.execute(
                    insert(approval_decisions),
                    [
                        {"approval_request_id": request_id, "response_id": response.id, "approve": approve}
                        for request_id, approve in decisions.items()
                    ],
                )
            if first_events:
                await self.events.append_in(connection, response.id, first_events, new_log=True)

    async def get_response(self, response_id: str, *, include_unstored: bool = False) -> Response | None:
        query = select(responses.c.data).where(responses.c.id == response_id)
        if not include_unstored:
            query = query.where(responses.c.stored.is_(True))
        async with self.engine.connect() as connection:
            data = (await connection.execute(query)).scalar_one_or_none()
        return None if data is None else Response.model_validate(data)

    async def save_response(self, response: Response, event: dict[str, Any] | None = None) -> None:
        """Write the response (and, in the same transaction, the event that announces it)."""
        async with write_transaction(self.engine) as connection:
            await connection.execute(
                update(responses)
                .where(responses.c.id == response.id)
                .values(status=response.status, data=response.model_dump(mode="json", by_alias=True))
            )
            if event is not None:
                await self.events.append_in(connection, response.id, [event])
        if event is not None:
            self.events.notifier.notify(response.id)

    async def purge(self, response_id: str, *, keep_events: bool = False) -> bool:
        """Remove every row of a response (but its event log, with `keep_events`, for a
        stream still being read). True when the response existed."""
        async with write_transaction(self.engine) as connection:
            removed = await connection.execute(delete(responses).where(responses.c.id == response_id))
            await connection.execute(delete(input_items).where(input_items.c.response_id == response_id))
            await connection.execute(delete(chat_contexts).where(chat_contexts.c.response_id == response_id))
            await connection.execute(delete(cancel_requests).where(cancel_requests.c.response_id == response_id))
            await connection.execute(delete(mcp_secrets).where(mcp_secrets.c.response_id == response_id))
            await connection.execute(delete(mcp_listings).where(mcp_listings.c.response_id == response_id))
            if not keep_events:
                await connection.execute(delete(events).where(events.c.response_id == response_id))
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
        async with self.engine.connect() as connection:
            rows = (await connection.execute(query)).scalars().all()
        return [Response.model_validate(data) for data in rows]

    async def list_responses(self, *, after: str | None, limit: int, order: Order) -> Page:
        query = select(responses.c.data).where(responses.c.stored.is_(True))
        key = (responses.c.sort_key, responses.c.id)
        if after is not None:
            cursor = await self._response_cursor(after)
            query = query.where(_beyond(key, cursor, order))
        ordering = [column.asc() if order == "asc" else column.desc() for column in key]
        async with self.engine.connect() as connection:
            rows = (await connection.execute(query.order_by(*ordering).limit(limit + 1))).scalars().all()
        return Page(data=list(rows[:limit]), has_more=len(rows) > limit)

    async def _response_cursor(self, response_id: str) -> tuple[int, str]:
        async with self.engine.connect() as connection:
            sort_key = (
                await connection.execute(select(responses.c.sort_key).where(responses.c.id == response_id))
            ).scalar_one_or_none()
        if sort_key is None:
            raise LookupError(response_id)
        return sort_key, response_id

    # ---- cancel requests -------------------------------------------------------------

    async def request_cancel(self, response_id: str) -> None:
        """Record that the client cancelled the response (idempotent) and wake local watchers."""
        async with write_transaction(self.engine) as connection:
            known = await connection.execute(
                select(cancel_requests.c.response_id).where(cancel_requests.c.response_id == response_id)
            )
            if known.first() is None:
                await connection.execute(
                    insert(cancel_requests).values(response_id=response_id, requested_at=time.time_ns() // 1000)
                )
        self.cancels.notify(response_id)

    async def cancel_requested(self, response_ids: list[str]) -> set[str]:
        """Which of these responses a client has cancelled."""
        async with self.engine.connect() as connection:
            rows = await connection.execute(
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
        async with self.engine.connect() as connection:
            rows = (await connection.execute(query.order_by(ordering).limit(limit + 1))).scalars().all()
        return Page(data=list(rows[:limit]), has_more=len(rows) > limit)

    async def _item_position(self, response_id: str, item_id: str) -> int:
        async with self.engine.connect() as connection:
            position = (
                await connection.execute(
                    select(input_items.c.position).where(
                        and_(input_items.c.response_id == response_id, input_items.c.item_id == item_id)
                    )
                )
            ).scalar_one_or_none()
        if position is None:
            raise LookupError(item_id)
        return position

    # ---- chat context ----------------------------------------------------------------

    async def turn_inputs(
        self, response_id: str, previous_response_id: str | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """What a first inference call starts from: the previous response's chat context and
        this response's input items, read on one connection."""
        async with self.engine.connect() as connection:
            base: list[dict[str, Any]] = []
            if previous_response_id is not None:
                base = (
                    await connection.execute(
                        select(chat_contexts.c.messages).where(chat_contexts.c.response_id == previous_response_id)
                    )
                ).scalar_one_or_none() or []
            items = await connection.execute(
                select(input_items.c.data)
                .where(input_items.c.response_id == response_id)
                .order_by(input_items.c.position)
            )
            return base, list(items.scalars().all())

    async def chat_context(self, response_id: str) -> list[dict[str, Any]] | None:
        async with self.engine.connect() as connection:
            return (
                await connection.execute(
                    select(chat_contexts.c.messages).where(chat_contexts.c.response_id == response_id)
                )
            ).scalar_one_or_none()

    async def save_chat_context(self, response_id: str, messages: list[dict[str, Any]]) -> None:
        await self._put(chat_contexts, response_id, messages=messages)

    async def _put(self, table: Table, response_id: str, **values: Any) -> None:
        """Write the one row a response has in `table` (update, or insert the first time)."""
        async with write_transaction(self.engine) as connection:
            changed = await connection.execute(
                update(table).where(table.c.response_id == response_id).values(**values)
            )
            if changed.rowcount == 0:
                await connection.execute(insert(table).values(response_id=response_id, **values))

    # ---- MCP: secrets, listings, approval decisions ---------------------------------------

    def _seal(self, secrets: McpSecrets) -> str:
        if self.secret_box is None:
            raise SecretsUnavailableError("no SECRETS_KEY is configured, so MCP secrets cannot be kept")
        return self.secret_box.seal(secrets)

    async def mcp_secrets(self, response_id: str, server_label: str) -> McpSecrets | None:
        async with self.engine.connect() as connection:
            sealed = (
                await connection.execute(
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

    async def forget_secrets(self, response_id: str) -> None:
        async with write_transaction(self.engine) as connection:
            await connection.execute(delete(mcp_secrets).where(mcp_secrets.c.response_id == response_id))

    async def listings(self, response_id: str) -> list[McpListing]:
        async with self.engine.connect() as connection:
            saved = (
                await connection.execute(select(mcp_listings.c.listings).where(mcp_listings.c.response_id == response_id))
            ).scalar_one_or_none()
        return [McpListing.model_validate(listing) for listing in saved or []]

    async def save_listings(self, response_id: str, listings: list[McpListing]) -> None:
        await self._put(mcp_listings, response_id, listings=[listing.model_dump(mode="json") for listing in listings])

    async def answered(self, approval_request_ids: list[str]) -> dict[str, str]:
        """Which of these approval requests are answered already: request id -> the response
        that answered it."""
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(approval_decisions.c.approval_request_id, approval_decisions.c.response_id).where(
                    approval_decisions.c.approval_request_id.in_(approval_request_ids)
                )
            )
            return dict(rows.all())

    async def record_decision(self, approval_request_id: str, response_id: str, approve: bool) -> None:
        try:
            async with write_transaction(self.engine) as connection:
                await connection.execute(
                    insert(approval_decisions).values(
                        approval_request_id=approval_request_id, response_id=response_id, approve=approve
                    )
                )
        except IntegrityError:
            raise ApprovalAlreadyAnsweredError([approval_request_id]) from None

    async def ping(self) -> None:
        async with self.engine.connect() as connection:
            await connection.execute(select(func.count()).select_from(select(responses.c.id).limit(1).subquery()))


def _flip(order: Order) -> Order:
    return "desc" if order == "asc" else "asc"


def _beyond(key: tuple, cursor: tuple[int, str], order: Order):
    sort_key, identifier = key
    if order == "asc":
        return or_(sort_key > cursor[0], and_(sort_key == cursor[0], identifier > cursor[1]))
    return or_(sort_key < cursor[0], and_(sort_key == cursor[0], identifier < cursor[1]))
