"""The one order of a turn's chat messages (`chat_completions/turn_messages.py`), which the
API sizes and the model's call sends: the conversation, the chain's context, results of calls
the previous response left open, then the new input; a later turn's own calls' results after
its context; nothing before the latest compaction summary."""

from __future__ import annotations

from typing import Any

from chat_completions import converter
from chat_completions.tool_table import ToolTable
from chat_completions.turn_messages import turn_messages
from context import compaction

NO_TOOLS = ToolTable([])
CHAIN = [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "answered"}]


def said(*texts: str) -> list[Any]:
    return converter.parse_items([{"type": "message", "role": "user", "content": text} for text in texts])


def contents(messages: list[dict[str, Any]]) -> list[Any]:
    return [message.get("content") for message in messages]


def test_a_first_turn_reads_conversation_chain_open_results_then_input() -> None:
    messages = turn_messages(
        NO_TOOLS,
        conversation=said("in the conversation"),
        known_context=CHAIN,
        inputs=said("new"),
        tool_results={"call_left_open": "its result"},
        compacted=None,
    )
    assert contents(messages.conversation) == ["in the conversation"]
    assert contents(messages.context) == ["earlier", "answered", "its result", "new"]
    assert messages.context[2] == {"role": "tool", "tool_call_id": "call_left_open", "content": "its result"}
    assert contents(messages.sent) == ["in the conversation", "earlier", "answered", "its result", "new"]


def test_a_result_of_a_request_passed_back_in_input_follows_it_there() -> None:
    inputs = converter.parse_items(
        [
            {
                "type": "mcp_approval_request",
                "id": "mcpr_1",
                "server_label": "s",
                "name": "tool",
                "arguments": "{}",
            },
            {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
        ]
    )
    messages = turn_messages(
        NO_TOOLS, conversation=[], known_context=[], inputs=inputs, tool_results={"mcpr_1": "ran"}, compacted=None
    )
    tool_messages = [message for message in messages.context if message["role"] == "tool"]
    assert tool_messages == [{"role": "tool", "tool_call_id": "mcpr_1", "content": "ran"}]
    assert messages.context.index(tool_messages[0]) > 0, "after the request's call, not before the input"


def test_a_later_turn_adds_its_calls_results_to_its_context_and_reads_no_input() -> None:
    messages = turn_messages(
        NO_TOOLS, conversation=[], known_context=CHAIN, inputs=None, tool_results={"c1": "done"}, compacted=None
    )
    assert contents(messages.context) == ["earlier", "answered", "done"]


def test_nothing_before_the_latest_summary_is_sent() -> None:
    summary = {"role": "user", "content": "the summary", compaction.MARKER: True}
    messages = turn_messages(
        NO_TOOLS,
        conversation=said("old"),
        known_context=[summary],
        inputs=said("new"),
        tool_results={},
        compacted=None,
    )
    assert contents(messages.sent) == ["the summary", "new"]
