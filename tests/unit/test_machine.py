"""The state machine as data: legal paths, and illegal triggers refused as a domain error."""

import pytest

from models.errors import DurableResponsesError
from workflows.machine import TRANSITIONS, IllegalTransition, ResponseMachine, State


def fire_all(*triggers: str) -> ResponseMachine:
    machine = ResponseMachine()
    for trigger in triggers:
        machine.fire(trigger)
    return machine


@pytest.mark.parametrize(
    ("triggers", "final", "status"),
    [
        (("start", "complete"), State.COMPLETED, "completed"),
        (("start", "truncate"), State.INCOMPLETE, "incomplete"),
        (("start", "run_tools", "tools_done", "complete"), State.COMPLETED, "completed"),
        (("start", "request_approval", "approval_decided", "tools_done", "complete"), State.COMPLETED, "completed"),
        (("execute_approved", "tools_done", "complete"), State.COMPLETED, "completed"),
        (("start", "fail"), State.FAILED, "failed"),
        (("start", "run_tools", "cancel"), State.CANCELLED, "cancelled"),
        (("cancel",), State.CANCELLED, "cancelled"),
    ],
)
def test_legal_paths(triggers, final, status):
    machine = fire_all(*triggers)
    assert machine.state == final and machine.response_status == status and machine.is_terminal


def test_initial_state_is_queued():
    machine = ResponseMachine()
    assert machine.state == State.CREATED and machine.response_status == "queued" and not machine.is_terminal


@pytest.mark.parametrize(
    "triggers",
    [
        ("complete",),
        ("start", "tools_done"),
        ("start", "complete", "fail"),
        ("start", "complete", "cancel"),
        ("start", "approval_decided"),
        ("start", "start"),
    ],
)
def test_illegal_triggers_raise_a_domain_error_and_leave_the_state(triggers):
    machine = fire_all(*triggers[:-1])
    before = machine.state
    with pytest.raises(IllegalTransition) as refused:
        machine.fire(triggers[-1])
    assert isinstance(refused.value, DurableResponsesError)
    assert machine.state == before


def test_terminal_states_have_no_way_out():
    terminal = {State.COMPLETED, State.FAILED, State.CANCELLED, State.INCOMPLETE}
    for transition in TRANSITIONS:
        sources = transition["source"] if isinstance(transition["source"], list) else [transition["source"]]
        assert not terminal.intersection(sources), transition


def test_responses_share_the_table_but_not_their_state():
    first, second = ResponseMachine(), ResponseMachine()
    first.fire("start")
    first.fire("complete")
    assert second.state == State.CREATED
    second.fire("cancel")
    assert (first.state, second.state) == (State.COMPLETED, State.CANCELLED)


def test_an_unknown_trigger_is_a_domain_error():
    with pytest.raises(IllegalTransition):
        ResponseMachine().fire("explode")
