"""Running one call of a hosted tool (`models/hosted_tools.py`) for the response's workflow:
each tool's runner, by its item type, takes the call and what any run needs (`HostedCall`),
and gives back the call as it ended and what the model is told (`Ran`). A call that fails
for good ends its item `failed` and tells the model why: the response goes on.

Each tool's runner lives in a module of its own (`workflows/web_search_call.py`, ...);
`workflows/hosted_runners.py` holds them by item type, and `tests/unit/test_hosted_tools.py`
holds the records and the runners together.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from models.activity_io import CheckedToolResult
    from models.events import StreamEvent, hosted_closing
    from models.history_budget import ToolResult
    from models.hosted_tools import BY_ITEM_TYPE
    from models.moderation import ModerationPlan
    from models.responses import Response
    from models.search import Source
    from models.workflow_io import ExecutionSettings
    from workflows.failures import application_failure, is_cancel_request


@dataclass(frozen=True)
class HostedCall:
    """What a run of any hosted tool's call needs of its response."""

    response: Response
    project: str
    settings: ExecutionSettings
    emit_events: bool
    first_number: int
    """The number of the first result it shows the model (`[n]`), after the response's earlier ones."""
    emit: Callable[[list[StreamEvent]], Awaitable[None]]
    follow_index: int | None = None
    """Where the item that follows the call with its results goes (its tool has one: a
    `shell_call_output`)."""

    @property
    def held(self) -> ModerationPlan | None:
        """The response's moderation plan when it holds its output: the tool's output is then
        checked before any of it is sent (`guardrails/tool_outputs.py`)."""
        plan = self.response.moderation_plan
        return plan if plan is not None and plan.holds_output else None


@dataclass(frozen=True)
class Ran:
    call: Any
    """The item as the run ended it."""
    told: ToolResult
    """What the model is told."""
    sources: list[Source] = field(default_factory=list)
    """What it cites, numbered on from `HostedCall.first_number`."""
    parked: bool = False
    """Its fields wait in the store, under the call's id."""
    follows: Any | None = None
    """The item that follows the call with its results, at `HostedCall.follow_index` (always
    one, when its tool has one: the response's items keep the places they were given)."""
    checked: CheckedToolResult | None = None
    """What the check of its output found, when the response holds its output."""


Runner = Callable[[HostedCall, Any, int], Awaitable[Ran]]


async def failed(error: ActivityError, run: HostedCall, call: Any, index: int) -> Ran:
    """A call that failed for good ends its item `failed` and tells the model why (a cancel is
    not a failure: it goes on up)."""
    if is_cancelled_exception(error) or is_cancel_request(error):
        raise error
    failure = application_failure(error)
    reason = failure.message if failure else str(error.cause or error)
    ended = call.model_copy(update={"status": "failed"})
    await run.emit(hosted_closing(ended, index))
    what = BY_ITEM_TYPE[call.type].name.replace("_", " ")
    return Ran(ended, ToolResult(text=f"Error: the {what} failed: {reason}"))
