"""Pure Responses <-> chat-completions conversion."""

from activities import chat_format
from models.items import OutputFunctionCall, OutputMessage, OutputText
from models.requests import CreateResponseRequest
from models.responses import Response


def response(**fields) -> Response:
    return Response.from_request("resp_1", 0, CreateResponseRequest.model_validate({"model": "m", "input": "x", **fields}))


def test_assistant_text_and_calls_share_one_message():
    items = chat_format.parse_items([
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me check."}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{\"a\":1}"},
        {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "one"}]},
    ])
    messages = chat_format.items_to_messages(items)
    assert messages[0]["content"] == "Let me check."
    assert [call["id"] for call in messages[0]["tool_calls"]] == ["c1", "c2"]
    assert messages[1] == {"role": "tool", "tool_call_id": "c1", "content": "one"}


def test_reasoning_items_passed_back_are_dropped():
    items = chat_format.parse_items([{"type": "reasoning", "id": "rs_1", "summary": []},
                                     {"type": "message", "role": "user", "content": "hi"}])
    assert chat_format.items_to_messages(items) == [{"role": "user", "content": "hi"}]


def test_request_for_openai_uses_max_completion_tokens():
    request = chat_format.build_chat_request(response(max_output_tokens=10), [], "https://api.openai.com/v1")
    assert request["max_completion_tokens"] == 10 and "max_tokens" not in request
    request = chat_format.build_chat_request(response(max_output_tokens=10), [], "http://localhost:11434/v1")
    assert request["max_tokens"] == 10


def test_reasoning_effort_and_no_tools_means_no_tool_fields():
    request = chat_format.build_chat_request(response(reasoning={"effort": "low"}), [], "http://x/v1")
    assert request["reasoning_effort"] == "low"
    assert "tools" not in request and "tool_choice" not in request and "parallel_tool_calls" not in request


def test_assistant_reply_becomes_output_items():
    output = chat_format.assistant_to_output({
        "role": "assistant", "content": "text", "refusal": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    })
    assert isinstance(output[0], OutputMessage) and output[0].content == [OutputText(type="output_text", text="text")]
    assert isinstance(output[1], OutputFunctionCall) and output[1].call_id == "call_1"
    # Passed back as input items (as clients replay output), the reply is the same message again.
    passed_back = chat_format.parse_items([item.model_dump(mode="json") for item in output])
    assert chat_format.items_to_messages(passed_back) == [{
        "role": "assistant", "content": "text",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }]
