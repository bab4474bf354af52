"""The response object, as `GET /v1/responses/{id}` returns it and as the workflow builds it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, SerializationInfo, SerializerFunctionWrapHandler, model_serializer

from models.items import OutputItem
from models.moderation import ModerationPlan, ModerationProgress, ResponseModeration
from models.requests import CompactionEntry, CreateResponseRequest, ReasoningConfig, TextConfig
from models.tools import Tool, ToolChoice
from models.wire import WireModel

ResponseStatus = Literal["queued", "in_progress", "completed", "failed", "cancelled", "incomplete"]
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "incomplete"})

WIRE = {"wire": True}
"""Serialization context for what clients see (`model_dump(context=WIRE)`)."""

# What a response shows for a sampling parameter its request left out: the values OpenAI
# documents as defaults. Inside, an unset parameter stays None, and is not sent upstream.
SAMPLING_DEFAULTS = {
    "temperature": 1.0,
    "top_p": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "top_logprobs": 0,
}


class InputTokensDetails(BaseModel):
    cached_tokens: int = 0
    cache_write_tokens: int = 0


class OutputTokensDetails(BaseModel):
    reasoning_tokens: int = 0


class Usage(BaseModel):
    input_tokens: int = 0
    input_tokens_details: InputTokensDetails = Field(default_factory=InputTokensDetails)
    output_tokens: int = 0
    output_tokens_details: OutputTokensDetails = Field(default_factory=OutputTokensDetails)
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            input_tokens_details=InputTokensDetails(
                cached_tokens=self.input_tokens_details.cached_tokens + other.input_tokens_details.cached_tokens,
            ),
            output_tokens=self.output_tokens + other.output_tokens,
            output_tokens_details=OutputTokensDetails(
                reasoning_tokens=self.output_tokens_details.reasoning_tokens
                + other.output_tokens_details.reasoning_tokens,
            ),
            total_tokens=self.total_tokens + other.total_tokens,
        )


class ResponseErrorInfo(BaseModel):
    code: str = "server_error"
    message: str


class IncompleteDetails(BaseModel):
    reason: Literal["max_output_tokens", "content_filter", "steered"]


class ConversationRef(BaseModel):
    id: str


class Response(WireModel):
    id: str
    object: Literal["response"] = "response"
    created_at: int
    status: ResponseStatus
    background: bool = False
    completed_at: int | None = None
    error: ResponseErrorInfo | None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    model: str
    output: list[OutputItem] = Field(default_factory=list)
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None
    reasoning: ReasoningConfig = Field(default_factory=ReasoningConfig)
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    prompt: dict[str, Any] | None = None
    """The prompt the response was made from: `{id, version, variables}` (`models/prompts.py`)."""
    moderation: ResponseModeration | None = None
    """What its moderation checks found (`models/moderation.py`); set once it ends."""
    service_tier: str = "default"
    store: bool = True
    temperature: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    top_logprobs: int | None = None
    text: TextConfig = Field(default_factory=TextConfig)
    tool_choice: ToolChoice = "auto"
    tools: list[Tool] = Field(default_factory=list)
    top_p: float | None = None
    truncation: Literal["auto", "disabled"] = "disabled"
    usage: Usage | None = None
    user: str | None = None
    conversation: ConversationRef | None = None
    include: list[str] = Field(default_factory=list)
    """What the request asked to be included (`reasoning.encrypted_content`, logprobs): it
    shapes the output, and is not part of the object clients see."""
    context_management: list[CompactionEntry] | None = None
    """When to compact (`context/compaction.py`); not part of the object clients see."""

    compact_only: bool = False
    """A response of `POST /v1/responses/compact`: its one model call compacts its input into
    a `compaction` item; not part of the object clients see."""

    generate: bool = True
    """False (WebSocket mode's `generate: false`): its one turn records its input as context
    for a follow-up and asks the model nothing; not part of the object clients see."""

    moderation_plan: ModerationPlan | None = None
    """The checks it runs (the request's `moderation`, no weaker than its project's policy:
    `guardrails/`); not part of the object clients see."""

    moderation_progress: ModerationProgress | None = None
    """Its moderation checks so far (`workflows/moderation.py`); not part of the object clients see."""

    held_by_connection: bool = False
    """An unstored response (`store: false`) kept, chain and all, while the WebSocket
    connection that made it is open, so that connection may continue from it
    (`websocket_mode/held.py`); not part of the object clients see."""

    @property
    def compaction(self) -> CompactionEntry | None:
        return self.context_management[0] if self.context_management else None

    @model_serializer(mode="wrap")
    def _effective_sampling(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if info.context and info.context.get("wire"):
            data.pop("include", None)
            data.pop("context_management", None)
            data.pop("compact_only", None)
            data.pop("generate", None)
            data.pop("held_by_connection", None)
            data.pop("moderation_plan", None)
            data.pop("moderation_progress", None)
            for name, default in SAMPLING_DEFAULTS.items():
                if data.get(name) is None:
                    data[name] = default
        return data

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @classmethod
    def from_request(cls, response_id: str, created_at: int, request: CreateResponseRequest) -> Response:
        echoed: dict[str, Any] = request.model_dump(
            include={
                "instructions",
                "max_output_tokens",
                "max_tool_calls",
                "model",
                "parallel_tool_calls",
                "previous_response_id",
                "safety_identifier",
                "prompt_cache_key",
                "store",
                "temperature",
                "tool_choice",
                "top_p",
                "user",
                "background",
                "presence_penalty",
                "frequency_penalty",
                "top_logprobs",
            }
        )
        conversation_id = request.conversation_id
        return cls(
            id=response_id,
            created_at=created_at,
            status="queued" if request.background else "in_progress",
            metadata=request.metadata or {},
            reasoning=request.reasoning or ReasoningConfig(),
            text=request.text or TextConfig(),
            tools=[tool.redacted() if tool.type == "mcp" else tool for tool in request.tools],
            service_tier=request.service_tier if request.service_tier not in (None, "auto") else "default",
            truncation=request.truncation or "disabled",
            conversation=ConversationRef(id=conversation_id) if conversation_id else None,
            include=list(request.include or []),
            context_management=request.context_management,
            moderation_plan=ModerationPlan.of(request.moderation) if request.moderation else None,
            **echoed,
        )


class DeletedResponse(BaseModel):
    id: str
    object: Literal["response.deleted"] = "response.deleted"
    deleted: bool = True
