"""Input and output items of the Responses API; every union is discriminated on `type`.

Input items are what a client may send in `input` (including output items passed back).
Each knows how it is listed by `GET /v1/responses/{id}/input_items` (`as_listed`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StrictBool

from models.code_items import (
    ApplyPatchCallInput,
    ApplyPatchCallItem,
    ApplyPatchCallOutputInput,
    CodeInterpreterCallItem,
    LocalShellCallInput,
    LocalShellCallItem,
    LocalShellCallOutputInput,
    ShellCallInput,
    ShellCallItem,
    ShellCallOutputInput,
    ShellCallOutputItem,
)
from models.wire import ItemId, ItemStatus, ListedAsSent, SearchCall, WireModel

# ---- content parts ------------------------------------------------------------------------


class InputText(WireModel):
    type: Literal["input_text"]
    text: str


class InputImage(WireModel):
    type: Literal["input_image"]
    image_url: str | None = None
    file_id: str | None = None
    detail: Literal["low", "high", "auto", "original"] = "auto"


class InputFile(WireModel):
    type: Literal["input_file"]
    file_data: str | None = None
    file_id: str | None = None
    file_url: str | None = None
    filename: str | None = None


class OutputText(WireModel):
    type: Literal["output_text"]
    text: str
    annotations: list[dict[str, Any]] = Field(default_factory=list)
    logprobs: list[dict[str, Any]] = Field(default_factory=list)


class Refusal(WireModel):
    type: Literal["refusal"]
    refusal: str


ContentPart = Annotated[InputText | InputImage | InputFile | OutputText | Refusal, Field(discriminator="type")]
OutputContentPart = Annotated[OutputText | Refusal, Field(discriminator="type")]


# ---- input items --------------------------------------------------------------------------


class MessageItem(WireModel):
    type: Literal["message"] = "message"
    id: ItemId | None = None
    role: Literal["user", "system", "developer", "assistant"]
    content: str | list[ContentPart]
    status: ItemStatus | None = None

    def content_parts(self) -> list[BaseModel]:
        if isinstance(self.content, list):
            return list(self.content)
        if self.role == "assistant":
            return [OutputText(type="output_text", text=self.content)]
        return [InputText(type="input_text", text=self.content)]

    def as_listed(self, item_id: str) -> dict[str, Any]:
        return {
            "id": item_id,
            "type": "message",
            "role": self.role,
            "status": self.status or "completed",
            "content": [part.model_dump(exclude_none=True) for part in self.content_parts()],
        }


class FunctionCallItem(WireModel):
    type: Literal["function_call"]
    id: ItemId | None = None
    call_id: ItemId
    name: str
    arguments: str
    namespace: str | None = None
    status: ItemStatus | None = None

    def as_listed(self, item_id: str) -> dict[str, Any]:
        return self.model_dump(exclude_none=True) | {"id": item_id, "status": self.status or "completed"}


class FunctionCallOutputItem(WireModel):
    type: Literal["function_call_output"]
    id: ItemId | None = None
    call_id: ItemId
    output: str | list[ContentPart]
    status: ItemStatus | None = None

    def output_text(self) -> str:
        if isinstance(self.output, str):
            return self.output
        return "".join(getattr(part, "text", "") for part in self.output)

    def as_listed(self, item_id: str) -> dict[str, Any]:
        return self.model_dump(exclude_none=True) | {"id": item_id, "status": self.status or "completed"}


class CustomToolCallItem(ListedAsSent):
    """A call of a custom tool: free text `input`, rather than JSON arguments."""

    type: Literal["custom_tool_call"] = "custom_tool_call"
    id: ItemId | None = None
    call_id: ItemId
    name: str
    input: str
    namespace: str | None = None


class CustomToolCallOutputItem(ListedAsSent):
    type: Literal["custom_tool_call_output"]
    id: ItemId | None = None
    call_id: ItemId
    output: str | list[ContentPart]

    def output_text(self) -> str:
        if isinstance(self.output, str):
            return self.output
        return "".join(getattr(part, "text", "") for part in self.output)


class ItemReference(WireModel):
    type: Literal["item_reference"]
    id: str

    def as_listed(self, item_id: str) -> dict[str, Any]:  # resolved before it is stored
        raise TypeError("item references are resolved before they are stored")


class ReasoningText(WireModel):
    type: Literal["reasoning_text"] = "reasoning_text"
    text: str


class ReasoningItem(ListedAsSent):
    """The model's reasoning: `content` as the backend gave it, `encrypted_content` the same
    sealed for a client that keeps no state (`include: ["reasoning.encrypted_content"]`)."""

    type: Literal["reasoning"] = "reasoning"
    id: ItemId | None = None
    summary: list[dict[str, Any]] = Field(default_factory=list)
    content: list[ReasoningText] | None = None
    encrypted_content: str | None = None
    status: ItemStatus | None = None

    def text(self) -> str:
        return "".join(part.text for part in self.content or [])


class PassedBackItem(ListedAsSent):
    """Items of hosted tools a client passes back from earlier output (web or tool search):
    kept in the input as sent, with nothing in them for a chat-completions backend."""

    type: Literal[
        "web_search_call", "file_search_call", "code_interpreter_call", "tool_search_call", "tool_search_output"
    ]
    id: ItemId | None = None


class CompactionItem(ListedAsSent):
    """A context compacted into a summary (`context/compaction.py`): it stands for every item
    before it. `encrypted_content` is opaque; only the server that made it opens it."""

    type: Literal["compaction"] = "compaction"
    id: ItemId | None = None
    encrypted_content: str = Field(min_length=1, max_length=4 * 1024 * 1024)
    created_by: str | None = None


class WebSearchSource(WireModel):
    type: Literal["url"] = "url"
    url: str


class WebSearchAction(WireModel):
    type: Literal["search"] = "search"
    query: str
    sources: list[WebSearchSource] | None = None


SearchStatus = Literal["in_progress", "searching", "completed", "failed", "incomplete"]


class WebSearchCallItem(SearchCall, WireModel):
    """A search of the web (`web_search/`): its query, and its sources when the request's
    `include` asks for them."""

    type: Literal["web_search_call"] = "web_search_call"
    id: str
    action: WebSearchAction
    status: SearchStatus = "in_progress"


class FileSearchResult(WireModel):
    file_id: str
    filename: str
    score: float
    text: str
    attributes: dict[str, Any] = Field(default_factory=dict)


class FileSearchCallItem(SearchCall, WireModel):
    """A search of vector stores (`file_search/`): its queries, and its results when the
    request's `include` asks for them."""

    type: Literal["file_search_call"] = "file_search_call"
    id: str
    queries: list[str]
    status: SearchStatus = "in_progress"
    results: list[FileSearchResult] | None = None


class CompactionTriggerItem(ListedAsSent):
    """Last in `input`: the response compacts its context into a `compaction` item, and
    answers nothing else (what Codex sends to compact)."""

    type: Literal["compaction_trigger"] = "compaction_trigger"
    id: ItemId | None = None


# ---- MCP items (input and output alike) ---------------------------------------------------


class McpListedTool(WireModel):
    name: str
    input_schema: dict[str, Any] = Field(default_factory=dict)
    description: str | None = None
    annotations: dict[str, Any] | None = None

    @property
    def read_only(self) -> bool:
        return bool((self.annotations or {}).get("readOnlyHint"))

    @property
    def repeatable(self) -> bool:
        """Running a call twice does no more than running it once: the server says the tool
        only reads (`readOnlyHint`) or is idempotent (`idempotentHint`). MCP's defaults are
        false, so an unannotated tool is not repeatable."""
        hints = self.annotations or {}
        return hints.get("readOnlyHint") is True or hints.get("idempotentHint") is True


class McpListToolsItem(ListedAsSent):
    type: Literal["mcp_list_tools"] = "mcp_list_tools"
    id: str
    server_label: str
    tools: list[McpListedTool] = Field(default_factory=list)
    error: str | None = None


class McpProtocolError(WireModel):
    type: Literal["mcp_protocol_error"] = "mcp_protocol_error"
    code: int
    message: str

    def text(self) -> str:
        return f"MCP protocol error {self.code}: {self.message}"


class McpToolExecutionError(WireModel):
    type: Literal["mcp_tool_execution_error"] = "mcp_tool_execution_error"
    content: Any

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(str(part.get("text", "")) for part in self.content if isinstance(part, dict))
        return str(self.content)


class McpHttpError(WireModel):
    type: Literal["http_error"] = "http_error"
    code: int
    message: str

    def text(self) -> str:
        return self.message


McpCallError = Annotated[McpProtocolError | McpToolExecutionError | McpHttpError, Field(discriminator="type")]
McpCallStatus = Literal["in_progress", "completed", "incomplete", "calling", "failed"]


class McpCallItem(ListedAsSent):
    type: Literal["mcp_call"] = "mcp_call"
    id: str
    server_label: str
    name: str
    arguments: str
    approval_request_id: str | None = None
    output: str | None = None
    error: McpCallError | None = None
    status: McpCallStatus = "completed"

    @property
    def chat_call_id(self) -> str:
        """The id of the tool call in the chat context: the approval request's, if it had one."""
        return self.approval_request_id or self.id

    @property
    def has_run(self) -> bool:
        return self.status in ("completed", "failed", "incomplete")

    def result_text(self) -> str:
        """What the model is told the call returned."""
        if self.error is not None:
            return f"Error: {self.error.text()}"
        return self.output or ""


class McpApprovalRequestItem(ListedAsSent):
    type: Literal["mcp_approval_request"] = "mcp_approval_request"
    id: str
    server_label: str
    name: str
    arguments: str


class McpApprovalResponseItem(ListedAsSent):
    type: Literal["mcp_approval_response"] = "mcp_approval_response"
    id: ItemId | None = None
    approval_request_id: ItemId
    approve: StrictBool
    reason: str | None = Field(default=None, max_length=4096)


InputItem = Annotated[
    MessageItem
    | FunctionCallItem
    | FunctionCallOutputItem
    | CustomToolCallItem
    | CustomToolCallOutputItem
    | ItemReference
    | ReasoningItem
    | PassedBackItem
    | ShellCallInput
    | ShellCallOutputInput
    | LocalShellCallInput
    | LocalShellCallOutputInput
    | ApplyPatchCallInput
    | ApplyPatchCallOutputInput
    | CompactionItem
    | CompactionTriggerItem
    | McpListToolsItem
    | McpCallItem
    | McpApprovalRequestItem
    | McpApprovalResponseItem,
    Field(discriminator="type"),
]


# ---- output items -------------------------------------------------------------------------


class OutputMessage(WireModel):
    type: Literal["message"] = "message"
    id: str
    role: Literal["assistant"] = "assistant"
    status: ItemStatus = "completed"
    content: list[OutputContentPart]


class OutputFunctionCall(WireModel):
    type: Literal["function_call"] = "function_call"
    id: str
    call_id: ItemId
    name: str
    arguments: str
    namespace: str | None = None
    status: ItemStatus = "completed"


OutputItem = Annotated[
    OutputMessage
    | OutputFunctionCall
    | CustomToolCallItem
    | ReasoningItem
    | CompactionItem
    | WebSearchCallItem
    | FileSearchCallItem
    | CodeInterpreterCallItem
    | ShellCallItem
    | ShellCallOutputItem
    | LocalShellCallItem
    | ApplyPatchCallItem
    | McpListToolsItem
    | McpCallItem
    | McpApprovalRequestItem,
    Field(discriminator="type"),
]
