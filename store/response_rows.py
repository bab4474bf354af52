"""A response's rows as it is created: the response, its input items, its first events, its
sealed MCP secrets and what else it brings (`CreationParts`), written in the caller's
transaction (`Responses.create`, or a steered response's end, which keeps
its successor)."""

from __future__ import annotations

import time
from typing import Any, TypedDict

from models.responses import Response
from store.approvals import Approvals
from store.codec import dumps
from store.conversations import Conversations
from store.database import Transaction
from store.event_log import EventLog
from store.parked import Parked, ParkedFields
from store.steers import Steers


class CreationParts(TypedDict, total=False):
    decisions: dict[str, bool]
    """Answers to approval requests (by request id), decided by the key `decided_by`."""
    decided_by: str | None
    parked: Parked
    """The parked fields of approval requests it carries as stubs."""
    closes: list[str]
    """Open approval requests it answers or leaves: closed (`store/approvals.py`)."""
    applies: list[str]
    """Those of `closes` whose kept decision it applies."""
    commits: list[str]
    """Steers whose input it starts from: committed to it (`store/steers.py`)."""
    secrets_of: str | None
    """A response of the same project whose sealed MCP secrets it takes too (a steered
    response's successor)."""


async def insert_response(
    transaction: Transaction,
    events: EventLog,
    response: Response,
    items: list[tuple[str, dict[str, Any]]],
    first_events: list[dict[str, Any]] | None,
    sealed: dict[str, str],
    project: str,
    *,
    decisions: dict[str, bool] | None = None,
    decided_by: str | None = None,
    parked: Parked | None = None,
    closes: list[str] | None = None,
    applies: list[str] | None = None,
    commits: list[str] | None = None,
    secrets_of: str | None = None,
) -> None:
    """Also takes the response's conversation's lock (`ConversationLockedError` when a running
    response holds it)."""
    response_id = response.id
    await transaction.run(
        "INSERT INTO responses (id, created_at, sort_key, status, stored, previous_response_id, data, "
        "project, conversation_id) VALUES (:id, :created_at, :sort_key, :status, :stored, :previous, "
        ":data, :project, :conversation_id)",
        id=response_id,
        created_at=response.created_at,
        sort_key=time.time_ns() // 1000,
        status=response.status,
        stored=response.store,
        previous=response.previous_response_id,
        data=response.model_dump_json(),
        project=project,
        conversation_id=response.conversation.id if response.conversation else None,
    )
    if items:
        await transaction.run_many(
            "INSERT INTO input_items (response_id, position, item_id, data) "
            "VALUES (:response_id, :position, :item_id, :data)",
            [
                {"response_id": response_id, "position": position, "item_id": item_id, "data": dumps(data)}
                for position, (item_id, data) in enumerate(items)
            ],
        )
    if sealed:
        await transaction.run_many(
            "INSERT INTO mcp_secrets (response_id, server_label, sealed) VALUES (:response_id, :server_label, :sealed)",
            [{"response_id": response_id, "server_label": label, "sealed": value} for label, value in sealed.items()],
        )
    if decisions:
        await Approvals.answer_in(transaction, response_id, decisions, decided_by=decided_by)
    if parked:
        await ParkedFields.put_in(transaction, response_id, parked)
    if closes or applies:
        await Approvals.close_in(transaction, closes or [], by=response_id, applied=applies or [])
    if secrets_of is not None:
        await transaction.run(
            "INSERT INTO mcp_secrets (response_id, server_label, sealed) "
            "SELECT :id, server_label, sealed FROM mcp_secrets WHERE response_id = :of",
            id=response_id,
            of=secrets_of,
        )
    if commits:
        await Steers.commit_in(transaction, commits, response_id)
    if first_events:
        await events.append_in(transaction, response_id, first_events, new_log=True)
    if response.conversation is not None:
        await Conversations.lock(transaction, response.conversation.id, response_id)
