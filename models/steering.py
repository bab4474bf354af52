"""Steering: user input queued for a running response (WebSocket mode's `response.steer`).

A steer is kept in the store before the response's workflow is told of it (the `steer`
signal, which carries only its id: history is written at once, even while a model call runs), and the workflow decides what becomes of it when the response
stops: a successor response that starts from it (`committed`), kept for the client's own
continuation while the response waits for tool results or approvals (`pending`), or
refused (`failed`). `queued` is every steer's first status.
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


class ResolveSteersInput(BaseModel):
    response_id: str
    steer_ids: list[str]
    """The steers the workflow took, in the order it took them."""
    successor_id: str
    """The id a successor gets (made by the workflow: the same on every retry)."""
    required_input: list[dict[str, str]] = Field(default_factory=list)
    """What the client must answer before anything may follow (`required_input`): when there
    is some, the steers stay `pending` for the client's own continuation."""
    project: str = ""


class ResolveSteersResult(BaseModel):
    successor_id: str | None = None
    """The successor made (to be started once the response's end is written)."""


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
        }
    )
