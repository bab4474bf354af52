"""Streaming events, in OpenAI's shapes. `sequence_number` is added by the event log."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from models.items import OutputContentPart, OutputItem
from models.responses import Response


class StreamEvent(BaseModel):
    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class LifecycleEvent(StreamEvent):
    type: Literal[
        "response.created", "response.queued", "response.in_progress",
        "response.completed", "response.incomplete", "response.failed",
    ]
    response: Response


class OutputItemEvent(StreamEvent):
    type: Literal["response.output_item.added", "response.output_item.done"]
    output_index: int
    item: OutputItem


class ContentPartEvent(StreamEvent):
    type: Literal["response.content_part.added", "response.content_part.done"]
    item_id: str
    output_index: int
    content_index: int
    part: OutputContentPart


class TextDeltaEvent(StreamEvent):
    type: Literal["response.output_text.delta"] = "response.output_text.delta"
    item_id: str
    output_index: int
    content_index: int
    delta: str
    logprobs: list[Any] = Field(default_factory=list)


class TextDoneEvent(StreamEvent):
    type: Literal["response.output_text.done"] = "response.output_text.done"
    item_id: str
    output_index: int
    content_index: int
    text: str
    logprobs: list[Any] = Field(default_factory=list)


class ArgumentsDeltaEvent(StreamEvent):
    type: Literal["response.function_call_arguments.delta"] = "response.function_call_arguments.delta"
    item_id: str
    output_index: int
    delta: str


class ArgumentsDoneEvent(StreamEvent):
    type: Literal["response.function_call_arguments.done"] = "response.function_call_arguments.done"
    item_id: str
    output_index: int
    name: str
    arguments: str


class ErrorEvent(StreamEvent):
    type: Literal["error"] = "error"
    code: str | None = None
    message: str
    param: str | None = None


TERMINAL_TYPE_BY_STATUS = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
    "cancelled": "response.failed",
}


def opening_events(response: Response) -> list[dict[str, Any]]:
    """The first events of a response's log, written with the response itself."""
    follow = "response.queued" if response.status == "queued" else "response.in_progress"
    return [LifecycleEvent(type="response.created", response=response).wire(),
            LifecycleEvent(type=follow, response=response).wire()]
