"""What a turn's model call is asked (`InferenceInput`), from what the workflow holds.

One builder for every turn the workflow runs, and for the first turn's call (and its input
check) that the API starts while the workflow is still being started
(`activities/early_calls.py`): both ask the same, so the workflow's own call of that turn
joins the early one instead of asking again
(in the same process `activities/single_flight.py`; elsewhere the turn's claim,
`store/turns.py`). Pure: no I/O, no Temporal calls, so the API may run it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.activity_io import InferenceInput, ModerateInputRequest
    from models.mcp import McpFunction
    from models.workflow_io import ResponseWorkflowInput
    from workflows.moderation import input_check
    from workflows.response_end import may_end_in_the_call
    from workflows.response_state import ResponseState
    from workflows.turn import TurnPosition


def turn_input(
    state: ResponseState, functions: list[McpFunction], at: TurnPosition, *, lease_seconds: float, may_end: bool = False
) -> InferenceInput:
    """The call of the turn at `at`, with the tools and results the workflow holds now;
    `may_end`: it writes the response's end when its answer ends it (`workflows/response_end.py`)."""
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
        may_end=may_end,
    )


@dataclass(frozen=True)
class FirstTurn:
    """The first things a response's workflow does, as it will ask them."""

    call: InferenceInput
    check: ModerateInputRequest | None
    """The input's check, which the call waits for (a moderation plan with an input side)."""


def first_turn_input(request: ResponseWorkflowInput, *, lease_seconds: float) -> FirstTurn | None:
    """The first turn's call (and the input check before it), when that is the first thing the
    workflow does and its input alone fixes what is asked; None when something comes first (an
    MCP server's listing, approved calls, a background response's status) or there is no answer
    to ask for (a compaction only, a run continued as new)."""
    response = request.response
    if (
        request.carried is not None
        or response.background
        or response.compact_only
        or request.approvals
        or any(tool.type == "mcp" for tool in response.tools)
    ):
        return None
    state = ResponseState.of(request)
    position = TurnPosition(turn=0, output_offset=len(response.output))
    # As a run under the newest baseline (the one the API starts it with) asks it.
    call = turn_input(state, [], position, lease_seconds=lease_seconds, may_end=may_end_in_the_call(state, position))
    return FirstTurn(call, input_check(state, request.project, first=True))
