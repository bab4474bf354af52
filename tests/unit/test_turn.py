"""The turn's next step (`workflows/turn.py`): pure, so every branch is tested here in
milliseconds, without a workflow."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.items import McpApprovalRequestItem, McpCallItem, OutputFunctionCall, OutputMessage, OutputText
from workflows.turn import AwaitApproval, Finish, Infer, RunTools, next_step, within_max_tool_calls


def message() -> OutputMessage:
    return OutputMessage(id="msg_1", content=[OutputText(type="output_text", text="hi")])


def mcp_call(item_id: str, status: str = "in_progress") -> McpCallItem:
    return McpCallItem(id=item_id, server_label="s", name="add", arguments="{}", status=status)


def request(item_id: str) -> McpApprovalRequestItem:
    return McpApprovalRequestItem(id=item_id, server_label="s", name="delete", arguments="{}")


def function_call() -> OutputFunctionCall:
    return OutputFunctionCall(id="fc_1", call_id="call_1", name="f", arguments="{}")


@pytest.mark.parametrize(
    ("reason", "incomplete"), [("length", "max_output_tokens"), ("content_filter", "content_filter")]
)
def test_a_cut_reply_ends_the_response_incomplete(reason, incomplete):
    step = next_step([mcp_call("mcp_1")], 0, reason, set(), can_wait=True)
    assert step == Finish(trigger="truncate", incomplete_reason=incomplete)


def test_text_alone_completes():
    assert next_step([message()], 0, "stop", set(), can_wait=False) == Finish(trigger="complete")


def test_a_function_call_is_the_clients_to_run():
    assert next_step([message(), function_call()], 0, "tool_calls", set(), can_wait=True) == Finish(trigger="complete")


def test_calls_the_server_runs_are_run_then_shown_to_the_model():
    output = [message(), mcp_call("mcp_1"), mcp_call("mcp_2")]
    assert next_step(output, 0, "tool_calls", set(), can_wait=False) == RunTools((1, 2))
    ran = [message(), mcp_call("mcp_1", "completed"), mcp_call("mcp_2", "failed")]
    assert next_step(ran, 0, "tool_calls", set(), can_wait=False) == Infer()
    assert next_step(ran, 0, "tool_calls", set(), can_wait=False, steered=True) == Finish(
        trigger="steer", incomplete_reason="steered"
    )


def test_an_approval_is_waited_for_only_in_the_background():
    output = [request("mcpr_1")]
    assert next_step(output, 0, "tool_calls", set(), can_wait=True) == AwaitApproval((output[0],))
    assert next_step(output, 0, "tool_calls", set(), can_wait=False) == Finish(trigger="complete")
    assert next_step(output, 0, "tool_calls", {"mcpr_1"}, can_wait=True) == Infer()


def test_only_this_turns_items_count():
    earlier = [mcp_call("mcp_0"), function_call()]
    assert next_step([*earlier, message()], 2, "stop", set(), can_wait=False) == Finish(trigger="complete")


@given(ran=st.integers(0, 10), asked=st.integers(0, 10), limit=st.one_of(st.none(), st.integers(1, 20)))
def test_max_tool_calls_counts_the_calls_run_before(ran, asked, limit):
    output = [mcp_call(f"done_{n}", "completed") for n in range(ran)] + [mcp_call(f"new_{n}") for n in range(asked)]
    indexes = list(range(ran, ran + asked))
    allowed, refused = within_max_tool_calls(output, indexes, limit)
    assert allowed + refused == indexes
    assert len(allowed) == (asked if limit is None else max(0, min(asked, limit - ran)))
