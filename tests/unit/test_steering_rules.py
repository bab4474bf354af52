"""Steering's pure rules: where a steered response stops (never before its tools' results are
in, never between the deltas of a text), the machine's `steer` transition, what a client owes
an ended response, and the successor's settings."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from models.items import OutputItem
from models.responses import Response
from models.steering import required_input, successor_of
from workflows.machine import IllegalTransition, ResponseMachine, State
from workflows.steering import successor_id
from workflows.turn import Finish, Infer, RunTools, next_step

ITEM = TypeAdapter(OutputItem)


def item(**fields: object) -> Any:
    return ITEM.validate_python(fields)


def mcp_call(has_run: bool) -> Any:
    return item(
        type="mcp_call",
        id="mcp_1",
        server_label="tools",
        name="slow",
        arguments="{}",
        output="ok" if has_run else None,
        status="completed" if has_run else "calling",
    )


def message(text: str) -> Any:
    return item(
        type="message",
        id="msg_1",
        role="assistant",
        status="completed",
        content=[{"type": "output_text", "text": text, "annotations": []}],
    )


def test_a_steered_response_stops_once_its_tools_have_run_not_before():
    unrun = [mcp_call(has_run=False)]
    assert isinstance(next_step(unrun, 0, "tool_calls", set(), can_wait=False, steered=True), RunTools)
    ran = [mcp_call(has_run=True)]
    assert isinstance(next_step(ran, 0, "tool_calls", set(), can_wait=False), Infer)
    stopped = next_step(ran, 0, "tool_calls", set(), can_wait=False, steered=True)
    assert stopped == Finish(trigger="steer", incomplete_reason="steered")


def test_a_steered_answer_completes_as_written():
    assert next_step([message("all of it")], 0, "stop", set(), can_wait=False, steered=True) == Finish("complete")


@pytest.mark.parametrize("before", [("start",), ("start", "run_tools")])
def test_steer_ends_a_running_response_incomplete(before):
    machine = ResponseMachine()
    for trigger in before:
        machine.fire(trigger)
    machine.fire("steer")
    assert machine.state == State.INCOMPLETE and machine.response_status == "incomplete"


def test_steer_does_not_end_an_ended_response():
    machine = ResponseMachine()
    machine.fire("start")
    machine.fire("complete")
    with pytest.raises(IllegalTransition):
        machine.fire("steer")


def test_what_the_client_owes_an_ended_response():
    call = item(type="function_call", id="fc_1", call_id="call_1", name="lookup", arguments="{}")
    asked = item(type="mcp_approval_request", id="mcpr_1", server_label="tools", name="delete", arguments="{}")
    decided = item(type="mcp_approval_request", id="mcpr_2", server_label="tools", name="delete", arguments="{}")
    owed = required_input([message("hi"), mcp_call(True), call, asked, decided], decided={"mcpr_2"})
    assert owed == [
        {"type": "function_call_output", "call_id": "call_1", "name": "lookup"},
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1"},
    ]


def test_a_successor_inherits_the_settings_and_nothing_of_the_output():
    parent = Response(
        id="resp_parent",
        created_at=1,
        status="incomplete",
        model="m",
        instructions="be brief",
        temperature=0.2,
        output=[message("done")],
        metadata={"k": "v"},
    )
    successor = successor_of(parent, successor_id(parent.id), 2)
    assert successor.previous_response_id == parent.id and successor.output == [] and successor.status == "in_progress"
    assert (successor.instructions, successor.temperature, successor.metadata) == ("be brief", 0.2, {"k": "v"})
    assert successor.id == successor_id(parent.id) != successor_id("resp_other")
    assert successor.id.startswith("resp_") and len(successor.id) == len("resp_") + 48
