"""The body of `POST /v1/responses`.

Every parameter the official SDK can send is known here. Those we implement are typed;
those OpenAI documents as advisory are accepted and echoed; the rest are rejected with a
400 that names them (`REJECTED_PARAMETERS`). The README lists the same table.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, model_validator

from models.items import InputItem, MessageItem
from models.moderation import ModerationSetting
from models.prompts import PromptReference
from models.tools import Tool, ToolChoice
from models.unsupported import UnsupportedParameter

# Accepted and echoed, with no effect on what the backend is asked.
ADVISORY_PARAMETERS = (
    "user",
    "safety_identifier",
    "prompt_cache_key",
    "prompt_cache_retention",
    "prompt_cache_options",
    "service_tier",
    "stream_options",
    "client_metadata",
)

# Known to OpenAI, not implemented here: a request that sets them is refused, naming them.
REJECTED_PARAMETERS = {
    "image": "image generation options are not implemented",
    "access_programs": "access programs are not implemented",
    "background_options": "background options are not implemented; `background: true` alone is supported",
}


def _metadata_limits(value: dict[str, str]) -> dict[str, str]:
    if len(value) > 16:
        raise ValueError("metadata can have at most 16 keys")
    for key, item in value.items():
        if len(key) > 64:
            raise ValueError(f"metadata key '{key[:20]}...' is longer than 64 characters")
        if len(item) > 512:
            raise ValueError(f"metadata value of '{key}' is longer than 512 characters")
    return value


Metadata = Annotated[dict[str, str], AfterValidator(_metadata_limits)]
"""Up to 16 keys of up to 64 characters, with values of up to 512: OpenAI's limits."""

Includable = Literal[
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
    "message.input_image.image_url",
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
]


class ConversationReference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=80)


class JsonSchemaFormat(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    type: Literal["json_schema"]
    name: str = Field(min_length=1, max_length=64)
    schema_: dict[str, Any] = Field(alias="schema")
    description: str | None = None
    strict: StrictBool | None = None


class JsonObjectFormat(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["json_object"]


class TextFormat(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["text"]


class TextConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: TextFormat | JsonSchemaFormat | JsonObjectFormat = Field(
        default_factory=lambda: TextFormat(type="text"), discriminator="type"
    )
    verbosity: Literal["low", "medium", "high"] | None = None


class ReasoningConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None
    generate_summary: Literal["auto", "concise", "detailed"] | None = None


class CompactionEntry(BaseModel):
    """`context_management: [{"type": "compaction", "compact_threshold": N}]`: when the context
    a turn sends passes N tokens, it is compacted first (`context/compaction.py`); without N,
    at 90% of the model's window (when known)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["compaction"]
    compact_threshold: StrictInt | None = Field(default=None, ge=1, le=2**31 - 1)


MAX_CLIENT_FUNCTIONS = 1024
"""Function and custom tools a request may offer, namespaced ones included."""


class CreateResponseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=256)
    input: str | list[InputItem] = Field(default_factory=list)
    instructions: str | None = None
    previous_response_id: str | None = Field(default=None, max_length=80)
    store: StrictBool = True
    stream: StrictBool = False
    background: StrictBool = False
    tools: list[Tool] = Field(default_factory=list, max_length=512)
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: StrictBool = True
    max_tool_calls: StrictInt | None = Field(default=None, ge=1, le=10_000)
    temperature: StrictFloat | None = Field(default=None, ge=0, le=2)
    top_p: StrictFloat | None = Field(default=None, ge=0, le=1)
    presence_penalty: StrictFloat | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: StrictFloat | None = Field(default=None, ge=-2, le=2)
    top_logprobs: StrictInt | None = Field(default=None, ge=0, le=20)
    max_output_tokens: StrictInt | None = Field(default=None, ge=1, le=2**31 - 1)
    conversation: str | ConversationReference | None = None
    text: TextConfig | None = None
    reasoning: ReasoningConfig | None = None
    metadata: Metadata | None = None

    user: str | None = None
    safety_identifier: str | None = Field(default=None, max_length=256)
    prompt_cache_key: str | None = None
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    prompt_cache_options: dict[str, Any] | None = None
    service_tier: Literal["auto", "default", "flex", "scale", "priority"] | None = None
    include: list[Includable] | None = None
    stream_options: dict[str, Any] | None = None
    truncation: Literal["auto", "disabled"] | None = None
    client_metadata: dict[str, Any] | None = None

    context_management: list[CompactionEntry] | None = Field(default=None, max_length=1)

    prompt: PromptReference | None = None
    image: Any = None
    moderation: ModerationSetting | None = None
    access_programs: Any = None
    background_options: Any = None

    @model_validator(mode="after")
    def _refuse_unimplemented(self) -> CreateResponseRequest:
        for name, why in REJECTED_PARAMETERS.items():
            if getattr(self, name) not in (None, 0):
                raise UnsupportedParameter(name, why)
        if self.background and not self.store:
            raise UnsupportedParameter("background", "background responses must be stored (`store: true`)")
        named = self.client_tool_names()
        if len(named) > MAX_CLIENT_FUNCTIONS:
            raise UnsupportedParameter(
                "tools",
                f"at most {MAX_CLIENT_FUNCTIONS} function and custom tools may be offered, namespaced ones "
                f"included (this request has {len(named)})",
            )
        if len(set(named)) != len(named):
            raise UnsupportedParameter("tools", "tool names must be unique (within their namespace)")
        labels = [tool.server_label for tool in self.tools if tool.type == "mcp"]
        if len(set(labels)) != len(labels):
            raise UnsupportedParameter("tools", "each MCP tool needs a `server_label` of its own")
        choice = self.tool_choice
        if (
            not isinstance(choice, str)
            and choice.type in ("function", "custom")
            and (choice.namespace, choice.name) not in named
        ):
            raise UnsupportedParameter(
                "tool_choice", f"tool_choice names {choice.type} tool '{choice.name}', which is not in `tools`"
            )
        if not isinstance(choice, str) and choice.type == "mcp" and choice.server_label not in labels:
            raise UnsupportedParameter(
                "tool_choice", f"tool_choice names MCP server '{choice.server_label}', which is not in `tools`"
            )
        return self

    def client_tool_names(self) -> list[tuple[str | None, str]]:
        """(namespace, name) of every function and custom tool, namespaced ones included."""
        names: list[tuple[str | None, str]] = []
        for tool in self.tools:
            if tool.type in ("function", "custom"):
                names.append((None, tool.name))
            elif tool.type == "namespace":
                names.extend((tool.name, inner.name) for inner in tool.tools)
        return names

    @property
    def conversation_id(self) -> str | None:
        if isinstance(self.conversation, ConversationReference):
            return self.conversation.id
        return self.conversation

    def input_items(self) -> list[Any]:
        if isinstance(self.input, str):
            return [MessageItem(role="user", content=self.input)]
        return list(self.input)
