"""The OpenResponses specification's response object, items and streaming events, as strict
pydantic models written for these tests from the spec's `ResponseResource`, `ItemField` and
streaming-event schemas: every field the spec requires is required here (nullable where the
spec allows null), types are not coerced, and unknown fields are allowed (the spec's schemas
allow them too). `validate_response` and `validate_event` raise on the first mismatch.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class Spec(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


# ---- content ---------------------------------------------------------------------------------


class TopLogProb(Spec):
    token: str
    logprob: float
    bytes: list[int]


class LogProb(Spec):
    token: str
    logprob: float
    bytes: list[int]
    top_logprobs: list[TopLogProb]


class OutputTextContent(Spec):
    type: Literal["output_text"]
    text: str
    annotations: list[dict[str, Any]]
    logprobs: list[LogProb]


class RefusalContent(Spec):
    type: Literal["refusal"]
    refusal: str


class ReasoningTextContent(Spec):
    type: Literal["reasoning_text"]
    text: str


class InputTextContent(Spec):
    type: Literal["input_text"]
    text: str


ContentPart = Annotated[
    OutputTextContent | RefusalContent | ReasoningTextContent | InputTextContent, Field(discriminator="type")
]


# ---- items -----------------------------------------------------------------------------------

Status = Literal["in_progress", "completed", "incomplete"]


class Message(Spec):
    type: Literal["message"]
    id: str
    status: Status
    role: Literal["user", "assistant", "system", "developer"]
    content: list[ContentPart]


class FunctionCall(Spec):
    type: Literal["function_call"]
    id: str
    call_id: str
    name: str
    arguments: str
    status: Status


class FunctionCallOutput(Spec):
    type: Literal["function_call_output"]
    id: str
    call_id: str
    output: str | list[ContentPart]
    status: Status


class Reasoning(Spec):
    type: Literal["reasoning"]
    id: str
    summary: list[ContentPart]
    content: list[ContentPart] | None = None
    encrypted_content: str | None = None


ItemField = Annotated[Message | FunctionCall | FunctionCallOutput | Reasoning, Field(discriminator="type")]


# ---- the response ----------------------------------------------------------------------------


class IncompleteDetails(Spec):
    reason: str


class Error(Spec):
    code: str
    message: str


class InputTokensDetails(Spec):
    cached_tokens: int


class OutputTokensDetails(Spec):
    reasoning_tokens: int


class Usage(Spec):
    input_tokens: int
    output_tokens: int
    total_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens_details: OutputTokensDetails


class TextField(Spec):
    format: dict[str, Any]


class ResponseResource(Spec):
    id: str
    object: Literal["response"]
    created_at: int
    completed_at: int | None
    status: str
    incomplete_details: IncompleteDetails | None
    model: str
    previous_response_id: str | None
    instructions: str | None
    output: list[ItemField]
    error: Error | None
    tools: list[dict[str, Any]]
    tool_choice: str | dict[str, Any]
    truncation: Literal["auto", "disabled"]
    parallel_tool_calls: bool
    text: TextField
    top_p: float
    presence_penalty: float
    frequency_penalty: float
    top_logprobs: int
    temperature: float
    reasoning: dict[str, Any] | None
    usage: Usage | None
    max_output_tokens: int | None
    max_tool_calls: int | None
    store: bool
    background: bool
    service_tier: str
    metadata: dict[str, Any]
    safety_identifier: str | None
    prompt_cache_key: str | None


# ---- streaming events ------------------------------------------------------------------------


class Event(Spec):
    sequence_number: int


class LifecycleEvent(Event):
    type: Literal[
        "response.created",
        "response.queued",
        "response.in_progress",
        "response.completed",
        "response.failed",
        "response.incomplete",
    ]
    response: ResponseResource


class OutputItemEvent(Event):
    type: Literal["response.output_item.added", "response.output_item.done"]
    output_index: int
    item: ItemField | None


class ContentPartEvent(Event):
    type: Literal["response.content_part.added", "response.content_part.done"]
    item_id: str
    output_index: int
    content_index: int
    part: ContentPart


class TextDeltaEvent(Event):
    type: Literal["response.output_text.delta"]
    item_id: str
    output_index: int
    content_index: int
    delta: str
    logprobs: list[LogProb]


class TextDoneEvent(Event):
    type: Literal["response.output_text.done"]
    item_id: str
    output_index: int
    content_index: int
    text: str
    logprobs: list[LogProb]


class RefusalDeltaEvent(Event):
    type: Literal["response.refusal.delta"]
    item_id: str
    output_index: int
    content_index: int
    delta: str


class RefusalDoneEvent(Event):
    type: Literal["response.refusal.done"]
    item_id: str
    output_index: int
    content_index: int
    refusal: str


class ArgumentsDeltaEvent(Event):
    type: Literal["response.function_call_arguments.delta"]
    item_id: str
    output_index: int
    delta: str


class ArgumentsDoneEvent(Event):
    type: Literal["response.function_call_arguments.done"]
    item_id: str
    output_index: int
    arguments: str


class ReasoningDeltaEvent(Event):
    type: Literal["response.reasoning_text.delta"]
    item_id: str
    output_index: int
    content_index: int
    delta: str


class ReasoningDoneEvent(Event):
    type: Literal["response.reasoning_text.done"]
    item_id: str
    output_index: int
    content_index: int
    text: str


class ErrorPayload(Spec):
    type: str
    code: str | None
    message: str
    param: str | None


class ErrorEvent(Event):
    type: Literal["error"]
    error: ErrorPayload


StreamingEvent = Annotated[
    LifecycleEvent
    | OutputItemEvent
    | ContentPartEvent
    | TextDeltaEvent
    | TextDoneEvent
    | RefusalDeltaEvent
    | RefusalDoneEvent
    | ArgumentsDeltaEvent
    | ArgumentsDoneEvent
    | ReasoningDeltaEvent
    | ReasoningDoneEvent
    | ErrorEvent,
    Field(discriminator="type"),
]

_response = TypeAdapter(ResponseResource)
_event = TypeAdapter(StreamingEvent)


def validate_response(data: dict[str, Any]) -> ResponseResource:
    return _response.validate_python(data)


def validate_event(data: dict[str, Any]) -> Any:
    return _event.validate_python(data)
