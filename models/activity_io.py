"""One input and one result model per activity. Small on purpose: they live in workflow
history, so they carry ids and what is new, never the conversation."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from models.code_items import CodeInterpreterCallItem, ShellCallItem, ShellCallOutputItem
from models.history_budget import ToolResult
from models.items import FileSearchCallItem, McpCallItem, McpListToolsItem, OutputItem, WebSearchCallItem
from models.mcp import McpFunction, McpListing
from models.moderation import ModerationPlan, SafetyLimit, SideResult
from models.responses import Response, ResponseStatus, Usage
from models.search import Source
from models.tools import FileSearchTool, McpTool, WebSearchTool

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
    tool_results: dict[str, ToolResult] = Field(default_factory=dict)
    """What the tools run since the last inference call returned, by chat tool-call id."""
    mcp_functions: list[McpFunction] = Field(default_factory=list)
    """The MCP tools the model may call, besides the request's function tools."""
    max_attempts: int = 6
    """The turn's retry budget, counted across executions of the turn (`store/turns.py`)."""
    lease_seconds: float = 10.0
    """How long the call's claim on its turn lasts unrenewed (`store/turns.py`): the workflow
    task timeout, after which another worker may run the turn again."""
    model_group: str | None = None
    """The registry's model name to call: a fallback, after the deployments of the one asked
    for were down; None: the response's own `model`."""
    project: str = ""
    """Whose budget share the call draws on (`upstream/pacing.py`: fairness between projects)."""
    returning: bool = False
    """The call comes back from a wait for capacity: deferred again, it keeps its place."""
    compact: bool = False
    """Summarise the context into a `compaction` item instead of answering
    (`context/compaction.py`); the turn after it answers from the item."""
    from_start: bool = False
    """No turn of the response has been recorded yet (only compaction checks ran): the call
    starts from the response's input, as its first turn does."""
    web_search: bool = False
    """Offer the request's `web_search` tool to the model (a search provider is configured)."""
    set_up: list[str] = Field(default_factory=list)
    """The hosted tools that need setting up and are (`ExecutionSettings.set_up_tools`): a
    request's tool for one of them is offered to the model (`web_search` is so too when
    `web_search` says, as it did before this list)."""
    sources: list[Source] = Field(default_factory=list)
    """The search results shown to the model so far, numbered: its `[n]` become citations."""
    just_compacted: bool = False
    """The context was compacted right before this turn: it is not compacted again."""
    may_end: bool = False
    """When the answer ends the response, the call writes its end, as `finalize_response`
    would (`workflows/response_end.py`), and says so in `InferenceResult.ended`."""


class InferenceResult(BaseModel):
    output: list[OutputItem]
    """The new items; those in `parked` as stubs (`models/history_budget.py`)."""
    finish_reason: FinishReason
    usage: Usage
    parked: list[str] = Field(default_factory=list)
    """Ids of the items whose heavy fields wait in the store."""
    deployment: str | None = None
    """The deployment that answered (`upstream/registry.py`)."""
    compaction_due: bool = False
    """Nothing was asked: the context passed the compaction threshold, so the workflow
    compacts it first (and then runs the turn again)."""
    moderation: SideResult | None = None
    """What the output checks of the turn found (a moderation plan with an output mode)."""
    blocked: bool = False
    """A check blocked the output: `output` holds what passed, and the response ends."""
    ended: EndWritten | None = None
    """The call wrote the response's end (`InferenceInput.may_end`): the workflow does not."""


class ModerateInputRequest(BaseModel):
    """Check what is new to the model in a turn (`activities/moderation.py`)."""

    response_id: str
    project: str
    plan: ModerationPlan
    first: bool
    """The response's first turn: its input items are new."""
    tool_results: dict[str, ToolResult] = Field(default_factory=dict)
    """The results of the tools that ran since the last turn (by chat tool-call id)."""


class ModerateInputResult(BaseModel):
    result: SideResult


class RecordStatusInput(BaseModel):
    response_id: str
    status: ResponseStatus
    emit_events: bool = False


class RecordApprovalWaitInput(BaseModel):
    response_id: str
    approval_request_ids: list[str]


class RecordApprovalWaitResult(BaseModel):
    recorded: int


class RecordStatusResult(BaseModel):
    recorded: bool


class FinalizeInput(BaseModel):
    response: Response
    emit_events: bool = False
    parked: dict[str, str] = Field(default_factory=dict)
    """Output items that are stubs -> the item whose parked fields complete them: the final
    response has them whole."""
    tool_results: dict[str, ToolResult] = Field(default_factory=dict)
    """Results of tools run after the last inference call: kept in the chat context."""
    listings: list[McpListing] = Field(default_factory=list)
    """Every MCP listing this response saw, kept for the rest of its chain."""
    successor_id: str | None = None
    """The id a successor gets, should steers be queued for the response (made by the
    workflow: the same on every retry; `models/steering.py`)."""
    required_input: list[dict[str, str]] = Field(default_factory=list)
    """What the client owes the ended response (its steers then stay `pending`)."""
    project: str = ""
    safety: SafetyLimit | None = None
    """When a blocked response counts against its `safety_identifier` (None: never)."""


class HeldToolInput(BaseModel):
    """What a hosted tool's call needs to hold its output for a check (`guardrails/tool_outputs.py`)."""

    moderation: ModerationPlan | None = None
    """The response's plan, when it holds its output (`output: block`): the tool's output is
    checked whole before any of it is sent. None (and an input from a workflow older than
    this field): sent as it comes."""


class CheckedToolResult(BaseModel):
    """What the check of a hosted tool's output found (`guardrails/tool_outputs.py`)."""

    moderation: SideResult | None = None
    blocked: bool = False
    """The check blocked the output: it was withheld, and the response ends `content_filter`."""


class ListMcpToolsInput(HeldToolInput):
    response_id: str
    project: str = ""
    tool: McpTool
    """The request's tool, redacted: the activity reads its secrets from the store."""
    item_id: str
    output_index: int
    emit_events: bool = False


class ListMcpToolsResult(CheckedToolResult):
    item: McpListToolsItem
    parked: bool = False
    """The item is a stub: its tools' descriptions and schemas are parked under its id."""


class CallMcpToolInput(HeldToolInput):
    response_id: str
    project: str = ""
    server_url: str
    call: McpCallItem
    output_index: int
    emit_events: bool = False
    arguments_parked_in: str | None = None
    """The item (this call, or the approval request it runs) whose parked fields hold the
    call's arguments, when they were too large to travel."""
    repeatable: bool | None = None
    """The tool's listing says running it twice is harmless (`McpListedTool.repeatable`).
    A call that is not repeatable runs at most once: an attempt that finds an earlier one
    sent it ends with an unknown outcome instead of sending it again. None (an input from a
    workflow older than this field) counts as not repeatable."""


class CallMcpToolResult(CheckedToolResult):
    call: McpCallItem
    parked: bool = False
    """The call travels as a stub: its arguments, output and error are parked under its id."""


class EmitEventsInput(BaseModel):
    response_id: str
    events: list[dict[str, Any]]


class EmitEventsResult(BaseModel):
    appended: int


class FinalizeResult(BaseModel):
    stored: bool
    successor_id: str | None = None
    """The successor made from the response's steers, to be started now."""
    identifier_blocked: bool = False
    """This response's block was the one that blocked its `safety_identifier`."""


class EndWritten(BaseModel):
    """A response's end as a turn's call wrote it."""

    at: int
    """When, in seconds since the epoch: the response's `completed_at`, if it completed."""
    status: ResponseStatus
    written: FinalizeResult


class WebSearchInput(HeldToolInput):
    response_id: str
    project: str = ""
    call: WebSearchCallItem
    output_index: int
    emit_events: bool = False
    tool: WebSearchTool
    first_number: int = 1
    """The number the first result gets (numbers run on through the response)."""
    include_sources: bool = False


class WebSearchResult(CheckedToolResult):
    call: WebSearchCallItem
    text: str
    """What the model is told: the numbered results, or why there are none."""
    parked: bool = False
    """The text is long: it waits in the store under the call's id, as `output`."""
    sources: list[Source] = Field(default_factory=list)


class FileSearchInput(HeldToolInput):
    response_id: str
    project: str
    call: FileSearchCallItem
    output_index: int
    emit_events: bool = False
    tool: FileSearchTool
    first_number: int = 1
    """The number the first result gets (numbers run on through the response)."""
    include_results: bool = False


class FileSearchResult(CheckedToolResult):
    call: FileSearchCallItem
    text: str
    """What the model is told: the numbered chunks, or why there are none."""
    parked: bool = False
    """The text is long: it waits in the store under the call's id, as `output`."""
    sources: list[Source] = Field(default_factory=list)


# ---- code in a container (`activities/code_execution.py`) -----------------------------------


class PlaceContainerInput(BaseModel):
    container_id: str


class PlaceContainerResult(BaseModel):
    host: str | None
    """The worker host the container lives on (this one, if it lived nowhere yet); None: the
    container is gone (expired or deleted)."""


class RunCodeInput(HeldToolInput):
    response_id: str
    project: str
    call: CodeInterpreterCallItem
    output_index: int
    emit_events: bool = False
    timeout_seconds: float
    include_outputs: bool = False


class ContainerFileCreated(BaseModel):
    """A file a command wrote under /mnt/data, kept as one of the container's files."""

    file_id: str
    path: str


class RunCodeResult(CheckedToolResult):
    call: CodeInterpreterCallItem
    text: str
    """What the model is told: what the code printed (cut to a bound), its error, its files."""
    files: list[ContainerFileCreated] = Field(default_factory=list)


class RunShellInput(HeldToolInput):
    response_id: str
    project: str
    call: ShellCallItem
    output_index: int
    output_item: ShellCallOutputItem
    """The item its results become (empty), and where it goes."""
    output_item_index: int
    emit_events: bool = False
    command_seconds: float
    """How long each command may run."""


class RunShellResult(CheckedToolResult):
    call: ShellCallItem
    output_item: ShellCallOutputItem
    text: str
    files: list[ContainerFileCreated] = Field(default_factory=list)


class ContainerLostInput(BaseModel):
    container_id: str
    host: str


class ContainerLostResult(BaseModel):
    expired: bool
