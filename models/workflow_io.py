"""The input of `ResponseWorkflow` and the knobs the deployment sets for it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from models.history_budget import ToolResult
from models.hosted_tools import CODE_INTERPRETER, SHELL, WEB_SEARCH
from models.mcp import ApprovalDecision, McpListing
from models.moderation import SafetyLimit
from models.responses import Response
from models.search import Source
from models.webhooks import WebhookPolicy


class RetryBudget(BaseModel):
    """How long and how often Temporal retries one kind of activity."""

    start_to_close_seconds: float = Field(gt=0)
    maximum_attempts: int = Field(ge=1)
    initial_interval_seconds: float = Field(default=1.0, gt=0)
    maximum_interval_seconds: float = Field(default=30.0, gt=0)


class CodeExecution(BaseModel):
    """Where and how long code runs (`sandbox/`): set when the workers run code."""

    sandbox_task_queue: str
    """Where a container is placed on a host: any worker that runs code polls it."""
    host_task_queue_prefix: str
    """A container's commands run on its host's own queue: this, and the host's id."""
    command_seconds: float = 600.0
    """How long a code_interpreter call may run (SANDBOX_COMMAND_SECONDS)."""
    max_command_seconds: float = 6 * 3600.0
    host_wait_seconds: float = 300.0
    """How long a command waits for its container's host to take it (a host's worker that
    restarts takes its commands up again); past it, the host is taken to be gone."""

    def host_task_queue(self, host: str) -> str:
        return f"{self.host_task_queue_prefix}{host}"


class ExecutionSettings(BaseModel):
    """Chosen by the API server from its configuration and fixed for the workflow's life."""

    inference: RetryBudget = RetryBudget(start_to_close_seconds=600, maximum_attempts=6)
    store: RetryBudget = RetryBudget(start_to_close_seconds=30, maximum_attempts=10, maximum_interval_seconds=5)
    mcp_list: RetryBudget = RetryBudget(start_to_close_seconds=30, maximum_attempts=3)
    mcp_call: RetryBudget = RetryBudget(start_to_close_seconds=6 * 3600, maximum_attempts=3)
    mcp_heartbeat_seconds: float = Field(default=30.0, gt=0)
    """A tool call whose worker or MCP server gives no sign of life for this long is failed
    (and retried within `mcp_call`'s budget)."""
    continue_as_new_bytes: int = Field(default=8 * 1024 * 1024, gt=0)
    """A response's workflow continues as new between two turns once its history is this big
    (or Temporal suggests it sooner): its history starts again from what the turns carry
    (CONTINUE_AS_NEW_BYTES)."""
    approval_timeout_seconds: float = Field(default=7 * 24 * 3600.0, gt=0)
    """How long a background response waits for an approval before it completes with the
    request still open (the client can still answer it in a follow-up response)."""
    inference_queue_seconds: float = Field(default=1800.0, gt=0)
    """How long a response may wait in all for a deployment's capacity (rate limits and 429s
    spend no attempt; this bounds them by time: INFERENCE_QUEUE_TIMEOUT_SECONDS)."""
    webhooks: WebhookPolicy = Field(default_factory=WebhookPolicy)
    """Where a background response's events go (`models/webhooks.py`); nowhere by default."""
    mcp_task_queue: str | None = None
    """Where MCP tool calls run (`<task queue>-mcp`, slots of their own, so a slow MCP server
    never holds what a response does next); None: the response's own task queue (responses
    that started before it existed)."""
    webhook_task_queue: str | None = None
    """Where webhook deliveries run (`<task queue>-webhooks`); None: the response's own."""
    file_search_call: RetryBudget = RetryBudget(start_to_close_seconds=60, maximum_attempts=4)
    web_search: bool = False
    """Whether a search provider is configured: a `web_search` tool is then offered to the
    model as a function, and its calls run (`web_search/`)."""
    web_search_call: RetryBudget = RetryBudget(start_to_close_seconds=60, maximum_attempts=4)
    code_execution: CodeExecution | None = None
    """Where code runs (`code_interpreter`, the hosted `shell`); None: the workers run no code,
    and those tools are accepted and not offered."""
    safety: SafetyLimit = Field(default_factory=SafetyLimit)
    """When blocked responses block their `safety_identifier` (`store/safety_strikes.py`)."""
    search_attributes: bool = False
    """Whether the namespace has the response search attributes (`models/visibility.py`), so
    the workflow keeps `ResponseState` current."""

    def set_up_tools(self) -> list[str]:
        """The hosted tools (`models/hosted_tools.py`) that need setting up and are."""
        return [
            name
            for name, ready in (
                (WEB_SEARCH.name, self.web_search),
                (CODE_INTERPRETER.name, self.code_execution is not None),
                (SHELL.name, self.code_execution is not None),
            )
            if ready
        ]


def side_task_queues(task_queue: str) -> dict[str, str]:
    """The task queues of a deployment's other workloads, named after its response queue."""
    return {"mcp_task_queue": f"{task_queue}-mcp", "webhook_task_queue": f"{task_queue}-webhooks"}


def code_execution_for(
    task_queue: str, command_seconds: float, max_command_seconds: float, host_wait_seconds: float = 300.0
) -> CodeExecution:
    """The queues of a deployment's code execution, named after its response queue."""
    return CodeExecution(
        sandbox_task_queue=f"{task_queue}-sandbox",
        host_task_queue_prefix=f"{task_queue}-host-",
        command_seconds=command_seconds,
        max_command_seconds=max_command_seconds,
        host_wait_seconds=host_wait_seconds,
    )


def ingestion_task_queue(task_queue: str) -> str:
    """Where files are ingested into vector stores (`workflows/ingestion.py`), slots of its own."""
    return f"{task_queue}-ingestion"


class ResponseWorkflowInput(BaseModel):
    response: Response
    settings: ExecutionSettings = Field(default_factory=ExecutionSettings)
    emit_events: bool = False
    """Keep an event log (for `stream: true` or `background: true` responses)."""
    listings: list[McpListing] = Field(default_factory=list)
    """MCP listings the chain already has: those servers are not listed again."""
    approvals: list[ApprovalDecision] = Field(default_factory=list)
    """Answers (in `input`) to the previous response's approval requests."""
    parked: list[str] = Field(default_factory=list)
    """Approval requests among `approvals`, and listings among `listings`, that travel as
    stubs: their heavy fields are parked in the store under this response
    (`models/history_budget.py`)."""
    fallbacks: list[str] = Field(default_factory=list)
    """Model names to fail over to, in order, when every deployment of `response.model` is
    down past its retries (the registry's `router_settings.fallbacks`, read at creation)."""
    project: str = ""
    """The project of the key that created the response: its share of upstream budgets."""
    carried: CarriedLoop | None = None
    """Set when the response's workflow continued as new: where its loop was."""


class CarriedLoop(BaseModel):
    """Where a response's loop was, between two turns, when its workflow continued as new (its
    history had grown long): the next run goes on from there. The response itself (its output
    so far, large items as stubs) travels in `ResponseWorkflowInput.response`."""

    turn: int = Field(ge=0)
    recorded: bool
    """A turn's result is in the store (the next call does not start from the input again)."""
    compact: bool = False
    just_compacted: bool = False
    tool_results: dict[str, ToolResult] = Field(default_factory=dict)
    sources: list[Source] = Field(default_factory=list)
    parked: dict[str, str] = Field(default_factory=dict)
    answered: list[str] = Field(default_factory=list)
    """Approval requests answered in earlier runs (a late second answer is refused as such)."""
    runs: int = Field(default=1, ge=1)
    """Which run of the workflow this is (the first is 1)."""
    steers: list[str] = Field(default_factory=list)
    """Steers taken in earlier runs (the response stops at its next safe boundary)."""


ResponseWorkflowInput.model_rebuild()


class ResponseEnded(BaseModel):
    """A response workflow's result: which response, and how it ended. The store has the
    response itself; the result does not carry its output a second time. (A workflow that
    started before this returned the whole response: its `id` and `status` read the same.)"""

    model_config = ConfigDict(extra="ignore")
    id: str
    status: str


class ApprovalBody(BaseModel):
    """The body of `POST /v1/responses/{id}/approvals`."""

    model_config = ConfigDict(extra="forbid")
    approval_request_id: str = Field(min_length=1, max_length=255)
    approve: StrictBool
    reason: str | None = Field(default=None, max_length=4096)


class ApprovalUpdate(ApprovalBody):
    """A decision as the workflow's update receives it: the body, and who decided (the id of
    the API key; None while the server runs open), so the history says who."""

    decided_by: str | None = None


class ApprovalUpdateResult(BaseModel):
    accepted: bool = True
