"""What a response's workflow holds between its steps, in one place.

`ResponseWorkflow` builds it from its input in `@workflow.init`, before its run or any
handler begins, so no field is ever missing (an update that arrives with the first task
finds the response there). Pure data: deciding is `workflows/turn.py`'s, acting the
activities'.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models import visibility
    from models.history_budget import ToolResult
    from models.items import McpApprovalRequestItem
    from models.mcp import ApprovalDecision, McpListing
    from models.responses import Response
    from models.search import Source
    from models.tools import McpTool
    from models.workflow_io import ExecutionSettings, ResponseWorkflowInput
    from workflows.machine import ResponseMachine


@dataclass
class ResponseState:
    response: Response
    """The response so far: its output grows turn by turn."""
    settings: ExecutionSettings
    project: str
    emit_events: bool
    """Whether the response keeps an event log (streamed or background)."""
    servers: dict[str, McpTool]
    """The request's MCP tools, by server label."""
    machine: ResponseMachine = field(default_factory=ResponseMachine)
    awaited: dict[str, McpApprovalRequestItem] = field(default_factory=dict)
    """Approval requests asked in this run, by id."""
    decisions: dict[str, ApprovalDecision] = field(default_factory=dict)
    """Decisions on approval requests, by request id."""
    tool_results: dict[str, ToolResult] = field(default_factory=dict)
    """Results of tools run since the last inference call, by chat tool-call id."""
    listings: list[McpListing] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    """The search results shown to the model so far, numbered (its `[n]` cite them)."""
    parked: dict[str, str] = field(default_factory=dict)
    """Output items that travel as stubs -> the item whose parked fields complete them
    (itself, or for a call approved from a large request, the request)."""
    answered: set[str] = field(default_factory=set)
    """Approval requests answered in the runs before this one (it continued as new)."""
    steers: list[str] = field(default_factory=list)
    """Steers taken (the `steer` signal), in order: the response stops at its next safe boundary."""
    moderated_calls: set[str] = field(default_factory=set)
    tools_blocked: bool = False
    """A check blocked a hosted tool's output (`guardrails/tool_outputs.py`): the response ends
    `content_filter` once the turn's calls are done, without asking the model again."""
    """Calls whose results an input check has looked at (`workflows/moderation.py`)."""
    about: str = ""
    """What the response is, shown under its state in the workflow's current details
    (`visibility.shown`)."""

    @classmethod
    def of(cls, request: ResponseWorkflowInput) -> ResponseState:
        return cls(
            response=request.response,
            settings=request.settings,
            project=request.project,
            emit_events=request.emit_events,
            servers={tool.server_label: tool for tool in request.response.tools if isinstance(tool, McpTool)},
            parked={item_id: item_id for item_id in request.parked},
            about=visibility.details(
                previous_response_id=request.response.previous_response_id,
                tools=visibility.tool_names(request.response.tools),
                background=request.response.background,
                stream=request.emit_events and not request.response.background,
                conversation_id=request.response.conversation.id if request.response.conversation else None,
            ),
        )
