"""Pure Responses <-> chat-completions conversion."""

from chat_completions import converter
from chat_completions.tool_table import ToolTable
from models.items import OutputFunctionCall, OutputMessage, OutputText
from models.requests import CreateResponseRequest
from models.responses import Response

NO_TOOLS = ToolTable([])


def response(**fields) -> Response:
    return Response.from_request(
        "resp_1", 0, CreateResponseRequest.model_validate({"model": "m", "input": "x", **fields})
    )


def test_assistant_text_and_calls_share_one_message():
    items = converter.parse_items(
        [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me check."}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "g", "arguments": '{"a":1}'},
            {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "one"}]},
        ]
    )
    messages = converter.items_to_messages(items, NO_TOOLS)
    assert messages[0]["content"] == "Let me check."
    assert [call["id"] for call in messages[0]["tool_calls"]] == ["c1", "c2"]
    assert messages[1] == {"role": "tool", "tool_call_id": "c1", "content": "one"}


def test_reasoning_items_passed_back_are_dropped():
    items = converter.parse_items(
        [{"type": "reasoning", "id": "rs_1", "summary": []}, {"type": "message", "role": "user", "content": "hi"}]
    )
    assert converter.items_to_messages(items, NO_TOOLS) == [{"role": "user", "content": "hi"}]


def test_request_for_openai_uses_max_completion_tokens():
    request = converter.build_chat_request(response(max_output_tokens=10), [], "https://api.openai.com/v1", NO_TOOLS)
    assert request["max_completion_tokens"] == 10 and "max_tokens" not in request
    request = converter.build_chat_request(response(max_output_tokens=10), [], "http://localhost:11434/v1", NO_TOOLS)
    assert request["max_tokens"] == 10


def test_reasoning_effort_and_no_tools_means_no_tool_fields():
    request = converter.build_chat_request(response(reasoning={"effort": "low"}), [], "http://x/v1", NO_TOOLS)
    assert request["reasoning_effort"] == "low"
    assert "tools" not in request and "tool_choice" not in request and "parallel_tool_calls" not in request


def test_assistant_reply_becomes_output_items():
    output = converter.assistant_to_output(
        {
            "role": "assistant",
            "content": "text",
            "refusal": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        NO_TOOLS,
    )
    assert isinstance(output[0], OutputMessage) and output[0].content == [OutputText(type="output_text", text="text")]
    assert isinstance(output[1], OutputFunctionCall) and output[1].call_id == "call_1"
    # Passed back as input items (as clients replay output), the reply is the same message again.
    passed_back = converter.parse_items([item.model_dump(mode="json") for item in output])
    assert converter.items_to_messages(passed_back, NO_TOOLS) == [
        {
            "role": "assistant",
            "content": "text",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        }
    ]


CODEX_TOOLS = [
    {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
    {
        "type": "custom",
        "name": "apply_patch",
        "description": "Edit files.",
        "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch"'},
    },
    {
        "type": "namespace",
        "name": "agents",
        "description": "Sub-agents.",
        "tools": [
            {"type": "function", "name": "spawn", "parameters": {"type": "object"}},
            {"type": "custom", "name": "note"},
        ],
    },
    {"type": "web_search", "external_web_access": False},
    {"type": "tool_search", "execution": "client", "parameters": {"type": "object"}},
]


def test_the_model_sees_custom_and_namespaced_tools_as_functions_and_no_search_tools():
    table = ToolTable(response(tools=CODEX_TOOLS).tools)
    functions = {tool["function"]["name"]: tool["function"] for tool in table.chat_tools()}
    assert sorted(functions) == ["agents__note", "agents__spawn", "apply_patch", "exec_command"]
    patch = functions["apply_patch"]
    assert patch["parameters"]["required"] == ["input"] and "lark grammar" in patch["description"]


def test_calls_map_back_to_custom_and_namespaced_items_and_round_trip():
    table = ToolTable(response(tools=CODEX_TOOLS).tools)
    output = converter.assistant_to_output(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "apply_patch", "arguments": '{"input": "*** Begin Patch\\n"}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "agents__spawn", "arguments": "{}"}},
            ],
        },
        table,
    )
    patch, spawn = output
    assert (patch.type, patch.name, patch.input, patch.call_id) == (
        "custom_tool_call",
        "apply_patch",
        "*** Begin Patch\n",
        "c1",
    )
    assert (spawn.type, spawn.name, spawn.namespace) == ("function_call", "spawn", "agents")
    passed_back = converter.parse_items(
        [item.model_dump(mode="json") for item in output]
        + [{"type": "custom_tool_call_output", "call_id": "c1", "output": "Done!"}]
    )
    messages = converter.items_to_messages(passed_back, table)
    assert [call["function"]["name"] for call in messages[0]["tool_calls"]] == ["apply_patch", "agents__spawn"]
    assert messages[0]["tool_calls"][0]["function"]["arguments"] == '{"input": "*** Begin Patch\\n"}'
    assert messages[1] == {"role": "tool", "tool_call_id": "c1", "content": "Done!"}


def test_reasoning_becomes_an_item_and_is_sent_back_only_when_asked():
    output = converter.assistant_to_output({"role": "assistant", "content": "4", "reasoning_content": "2+2"}, NO_TOOLS)
    assert [item.type for item in output] == ["reasoning", "message"] and output[0].text() == "2+2"
    kept = converter.assistant_message({"role": "assistant", "content": "4", "reasoning_content": "2+2"})
    assert kept["reasoning_content"] == "2+2"
    plain = converter.build_chat_request(response(), [kept], "http://x/v1", NO_TOOLS)
    assert "reasoning_content" not in plain["messages"][0]
    sent = converter.build_chat_request(response(), [kept], "http://x/v1", NO_TOOLS, send_reasoning=True)
    assert sent["messages"][0]["reasoning_content"] == "2+2"
    passed_back = converter.parse_items([item.model_dump(mode="json") for item in output])
    assert converter.items_to_messages(passed_back, NO_TOOLS)[0]["reasoning_content"] == "2+2"
