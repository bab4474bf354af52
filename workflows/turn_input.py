"""What a turn's model call is asked (`InferenceInput`), from what the workflow holds.

One builder for every turn the workflow runs, and for the first turn's call that the API
starts while the workflow is still being started (`activities/early_calls.py`): both ask the
same, so the workflow's own call of that turn joins the early one instead of asking again
(in the same process `activities/single_flight.py`; elsewhere the turn's claim,
`store/turns.py`). Pure: no I/O, no Temporal calls, so the API may run it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.activity_io import InferenceInput
    from models.mcp import McpFunction
    from models.workflow_io import ResponseWorkflowInput
    from workflows.response_state import ResponseState


@dataclass(frozen=True)
class TurnPosition:
    """Where the loop is when it asks the model."""

    turn: int
    output_offset: int
    """The output index of the call's first item."""
    compact: bool = False
    from_start: bool = True
    just_compacted: bool = False


def turn_input(
    state: ResponseState, functions: list[McpFunction], at: TurnPosition, *, lease_seconds: float
) -> InferenceInput:
    """The call of the turn at `at`, with the tools and results the workflow holds now."""
    settings = state.settings
    return InferenceInput(
        response=state.response,
        turn=at.turn,
        emit_events=state.emit_events,
        output_offset=at.output_offset,
        tool_results=state.tool_results,
        mcp_functions=functions,
        max_attempts=settings.inference.maximum_attempts,
        lease_seconds=lease_seconds,
        project=state.project,
        compact=at.compact,
        from_start=at.from_start,
        just_compacted=at.just_compacted,
        web_search=settings.web_search,
        set_up=settings.set_up_tools(),
        sources=state.sources,
    )


def first_turn_input(request: ResponseWorkflowInput, *, lease_seconds: float) -> InferenceInput | None:
    """The first turn's call, when it is the first thing the workflow does and its input alone
    fixes what the call is asked; None when something comes first (an MCP server's listing,
    approved calls, an input check, a background response's status) or there is no answer to
    ask for (a compaction only, a run continued as new)."""
    response = request.response
    plan = response.moderation_plan
    if (
        request.carried is not None
        or response.background
        or response.compact_only
        or request.approvals
        or any(tool.type == "mcp" for tool in response.tools)
        or (plan is not None and plan.input is not None)
    ):
        return None
    state = ResponseState.of(request)
    return turn_input(state, [], TurnPosition(turn=0, output_offset=len(response.output)), lease_seconds=lease_seconds)
