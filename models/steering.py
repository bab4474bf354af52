"""Steering: user input queued for a running response (WebSocket mode's `response.steer`).

A steer is kept in the store, only while its response runs, before the response's workflow
is told of it (the `steer` signal, which carries only its id, so that the response stops at
its next safe boundary). The store decides: the steers it holds when the response's end is
written are those that follow it (none can join it after). As the end is written, each
becomes part of a successor that starts from them (`committed`), is kept for the client's
own continuation while the response waits for tool results or approvals (`pending`), or is
refused, the response having failed or been cancelled (`failed`). `queued` is every steer's
first status.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from models.client_tools import CLIENT_TOOLS, is_client_call
from models.responses import Response

SteerStatus = Literal["queued", "committed", "pending", "failed"]

MAX_PENDING_STEERS = 16
"""Steers one response may hold at once (`too_many_pending_steers` past it)."""

STEERABLE_STATUSES = frozenset({"queued", "in_progress"})

SUCCESSOR_STATUSES = frozenset({"completed", "incomplete"})
"""How a response may end for its steers to go on in a successor (one that failed or was
cancelled fails them: the connection tells the client)."""

ANSWERED_BY: dict[str, str] = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "mcp_approval_request": "mcp_approval_response",
    **{tool.item_type: tool.output_type for tool in CLIENT_TOOLS},
}
"""An output item the client answers -> the type of its answer."""

CLIENT_ITEM_TYPES = frozenset(tool.item_type for tool in CLIENT_TOOLS)


class SteerSignal(BaseModel):
    """The `steer` signal: a steer the store keeps, for the response to stop for."""

    steer_id: str = Field(min_length=1, max_length=80)


class StartSuccessorInput(BaseModel):
    successor_id: str
    project: str = ""


class StartSuccessorResult(BaseModel):
    started: bool
    """False: it had started already (a retry), or it is gone."""


def required_input(output: Sequence[Any], decided: Collection[str] = ()) -> list[dict[str, str]]:
    """Stubs of what the client must send for the calls and approval requests (those not
    `decided`) an ended response left to it (`response.steer.pending`'s `required_input`):
    a client's call ends its response, so only the last turn has any."""
    stubs: list[dict[str, str]] = []
    for item in output:
        kind = ANSWERED_BY.get(item.type)
        if kind is None or item.id in decided or (item.type in CLIENT_ITEM_TYPES and not is_client_call(item)):
            continue  # decided, or a hosted shell's call (it runs here)
        if kind == "mcp_approval_response":
            stubs.append({"type": kind, "approval_request_id": item.id})
        elif kind == "function_call_output":
            stubs.append({"type": kind, "call_id": item.call_id, "name": item.name})
        else:
            stubs.append({"type": kind, "call_id": item.call_id})
    return stubs


def successor_of(parent: Response, successor_id: str, created_at: int) -> Response:
    """The response that goes on from a steered one: its settings, following it, with nothing
    of its own yet (its input is its steers')."""
    return parent.model_copy(
        update={
            "id": successor_id,
            "created_at": created_at,
            "status": "in_progress",
            "background": False,
            "completed_at": None,
            "error": None,
            "incomplete_details": None,
            "output": [],
            "usage": None,
            "previous_response_id": parent.id,
            "compact_only": False,
            "generate": True,
            "moderation": None,
            "moderation_progress": None,  # the plan goes on: the steers are its input, checked as such
        }
    )
