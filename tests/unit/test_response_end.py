"""The end a turn's call may write (`workflows/response_end.py`): pure, so every answer is
tried here in milliseconds. The call writes an end exactly when the workflow, deciding from
the same answer, would end the response completed or incomplete; and what it writes is the
response the workflow's own last step writes for that end."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from models.activity_io import InferenceInput, InferenceResult
from models.items import McpCallItem, OutputFunctionCall, OutputMessage, OutputText
from models.requests import CreateResponseRequest
from models.responses import IncompleteDetails, Response, Usage
from models.steering import required_input
from models.workflow_io import ExecutionSettings, ResponseWorkflowInput
from workflows.machine import ResponseMachine
from workflows.response_end import call_end, may_end_in_the_call
from workflows.response_state import ResponseState
from workflows.steering import successor_id
from workflows.turn import Finish, TurnPosition, next_step

AT = 1_800_000_000
ENDED_FIELDS = {"status", "output", "usage", "incomplete_details", "completed_at"}
"""What a response's end changes in it."""


def _item(kind: str, index: int) -> Any:
    if kind == "message":
        return OutputMessage(id=f"msg_{index}", content=[OutputText(type="output_text", text="hi")])
    if kind == "function_call":
        return OutputFunctionCall(id=f"fc_{index}", call_id=f"call_{index}", name="f", arguments="{}")
    return McpCallItem(id=f"mcp_{index}", server_label="s", name="add", arguments="{}", status="in_progress")


def _response(**fields: Any) -> Response:
    request = CreateResponseRequest.model_validate({"model": "m", "input": "hi"} | fields)
    return Response.from_request("resp_1", 1, request)


answers = st.tuples(
    st.lists(st.sampled_from(["message", "function_call", "mcp_call"]), max_size=4),
    st.sampled_from(["stop", "length", "tool_calls", "content_filter"]),
    st.booleans(),
    st.lists(st.sampled_from(["message", "mcp_call"]), max_size=2),
)


@given(answers)
def test_the_call_writes_an_end_exactly_when_the_workflow_would_end_so(answer: Any) -> None:
    kinds, finish_reason, may_end, parked = answer
    output = [_item(kind, index) for index, kind in enumerate(kinds)]
    call = InferenceInput(response=_response(), may_end=may_end, emit_events=True, project="p")
    result = InferenceResult(
        output=output,
        finish_reason=finish_reason,
        usage=Usage(input_tokens=3, output_tokens=2),
        parked=[item.id for item in output if item.type in parked],
    )
    end = call_end(call, result, AT)
    step = next_step(output, 0, finish_reason, set(), can_wait=False)
    if not (may_end and isinstance(step, Finish)):
        assert end is None
        return
    assert end is not None and isinstance(step, Finish)
    # As the workflow ends it: its output and usage after the turn, the status its machine
    # ends in, a cut answer's reason, `completed_at` when it completed, nothing else changed.
    machine = ResponseMachine()
    machine.fire("start")
    machine.fire(step.trigger)
    final = end.response
    assert final.status == machine.response_status
    assert (final.output, final.usage) == (output, result.usage)
    reason = step.incomplete_reason
    assert final.incomplete_details == (IncompleteDetails(reason=reason) if reason is not None else None)
    assert final.completed_at == (AT if final.status == "completed" else None)
    assert final.model_dump(exclude=ENDED_FIELDS) == call.response.model_dump(exclude=ENDED_FIELDS)
    # What the chain keeps: nothing but the turn's parked items; its steers settle on it.
    assert (end.emit_events, end.project, end.tool_results, end.listings, end.safety) == (True, "p", {}, [], None)
    assert end.parked == {item_id: item_id for item_id in result.parked}
    assert end.successor_id == successor_id("resp_1")
    assert end.required_input == required_input(output)


def test_nothing_is_written_for_an_answer_the_workflow_looks_at_again() -> None:
    """A compaction due, output checks' verdicts, a blocked answer: the workflow's to conclude."""
    call = InferenceInput(response=_response(), may_end=True)
    text = [_item("message", 0)]
    for result in (
        InferenceResult(output=[], finish_reason="stop", usage=Usage(), compaction_due=True),
        InferenceResult(output=text, finish_reason="stop", usage=Usage(), blocked=True),
    ):
        assert call_end(call, result, AT) is None
    assert call_end(call, InferenceResult(output=text, finish_reason="stop", usage=Usage()), AT) is not None


def _state(**fields: Any) -> ResponseState:
    request = CreateResponseRequest.model_validate({"model": "m", "input": "hi"} | fields)
    return ResponseState.of(
        ResponseWorkflowInput(
            response=Response.from_request("resp_1", 1, request), settings=ExecutionSettings(), project="p"
        )
    )


def test_only_a_plain_first_turn_may_end_in_its_call() -> None:
    first = TurnPosition(turn=0, output_offset=0)
    assert may_end_in_the_call(_state(), first)
    assert may_end_in_the_call(_state(tools=[{"type": "function", "name": "f", "parameters": {}}]), first)
    assert not may_end_in_the_call(_state(), TurnPosition(turn=1, output_offset=0))
    assert not may_end_in_the_call(_state(), TurnPosition(turn=0, output_offset=0, compact=True))
    assert not may_end_in_the_call(_state(background=True), first)
    mcp = {"type": "mcp", "server_label": "s", "server_url": "https://mcp.example/mcp", "require_approval": "never"}
    assert not may_end_in_the_call(_state(tools=[mcp]), first)
    moderated = {"model": "omni-moderation-latest", "policy": {"output": {"mode": "block"}}}
    assert not may_end_in_the_call(_state(moderation=moderated), first)
