"""What a turn's model call is asked (`workflows/turn_input.py`): the call the API starts before
the workflow runs is the very call the workflow's first turn makes, and it is started only when
nothing comes before that turn."""

from __future__ import annotations

from typing import Any

import pytest

from models.items import McpApprovalRequestItem
from models.mcp import ApprovalDecision
from models.requests import CreateResponseRequest
from models.responses import Response
from models.workflow_io import CarriedLoop, ExecutionSettings, ResponseWorkflowInput
from workflows.moderation import input_check
from workflows.response_state import ResponseState
from workflows.turn import TurnPosition
from workflows.turn_input import first_turn_input, turn_input

MCP_TOOL = {"type": "mcp", "server_label": "s", "server_url": "https://mcp.example/mcp", "require_approval": "never"}


def workflow_input(**fields: Any) -> ResponseWorkflowInput:
    options = {key: fields.pop(key) for key in ("approvals", "carried", "emit_events") if key in fields}
    request = CreateResponseRequest.model_validate({"model": "m", "input": "hi"} | fields)
    return ResponseWorkflowInput(
        response=Response.from_request("resp_1", 1, request),
        settings=ExecutionSettings(web_search=True),
        project="p",
        **options,
    )


@pytest.mark.parametrize("emit_events", [False, True])
def test_the_early_call_is_the_workflows_first_call(emit_events: bool):
    given = workflow_input(
        emit_events=emit_events, tools=[{"type": "function", "name": "f", "parameters": {}}], temperature=0.5
    )
    first = first_turn_input(given, lease_seconds=7)
    assert first is not None and first.check is None
    early = first.call
    made = turn_input(ResponseState.of(given), [], TurnPosition(turn=0, output_offset=0), lease_seconds=7, may_end=True)
    assert early == made
    assert (early.turn, early.from_start, early.compact, early.emit_events) == (0, True, False, emit_events)
    assert early.project == "p" and early.web_search and early.lease_seconds == 7


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"background": True}, "a background response records its status first"),
        ({"tools": [MCP_TOOL]}, "an MCP server is listed first"),
        ({"carried": CarriedLoop(turn=3, recorded=True)}, "a run continued as new is mid-loop"),
    ],
)
def test_no_early_call_when_something_comes_before_the_first_turn(fields: dict[str, Any], why: str):
    assert first_turn_input(workflow_input(**fields), lease_seconds=10) is None, why


def test_no_early_call_for_a_compaction_or_approved_calls():
    compact = workflow_input()
    compact.response.compact_only = True
    assert first_turn_input(compact, lease_seconds=10) is None
    request = McpApprovalRequestItem(id="mcpr_1", server_label="s", name="add", arguments="{}")
    approved = workflow_input(approvals=[ApprovalDecision(request=request, approve=True)])
    assert first_turn_input(approved, lease_seconds=10) is None


def test_an_output_check_alone_leaves_the_early_call_unchecked():
    """Output checks run inside the call (`guardrails/held_output.py`): the call starts at once."""
    checked = workflow_input(moderation={"model": "omni-moderation-latest", "policy": {"output": {"mode": "block"}}})
    first = first_turn_input(checked, lease_seconds=10)
    assert first is not None and first.check is None and first.call.response.moderation_plan is not None


def test_an_input_check_comes_first_and_is_the_workflows_own():
    """The early call waits for the input check the workflow makes on its first turn."""
    given = workflow_input(moderation={"model": "omni-moderation-latest", "policy": {"input": {"mode": "block"}}})
    first = first_turn_input(given, lease_seconds=10)
    assert first is not None
    assert first.check == input_check(ResponseState.of(given), "p", first=True)
    assert first.check is not None and first.check.first and first.check.plan.input == "block"
