"""One input and one result model per activity. Small on purpose: they live in workflow
history, so they carry ids and what is new, never the conversation."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from models.items import OutputItem
from models.responses import Response, ResponseStatus, Usage

FinishReason = Literal["stop", "length", "tool_calls", "content_filter"]


class InferenceInput(BaseModel):
    response: Response
    """The request as the workflow holds it. A local activity's input is not written to
    history, so passing it costs nothing there and saves a store read."""
    turn: int = 0
    emit_events: bool = False
    """Stream from upstream and append the deltas to the event log."""
    output_offset: int = 0
    """The output index of this call's first item."""
    new_items: list[OutputItem] = Field(default_factory=list)
    """Output of this response since the last inference call (tool results), to append."""


class InferenceResult(BaseModel):
    output: list[OutputItem]
    finish_reason: FinishReason
    usage: Usage


class RecordStatusInput(BaseModel):
    response_id: str
    status: ResponseStatus
    emit_events: bool = False


class RecordStatusResult(BaseModel):
    recorded: bool


class FinalizeInput(BaseModel):
    response: Response
    emit_events: bool = False


class FinalizeResult(BaseModel):
    stored: bool
