"""Remote MCP tools against real MCP servers (streamable HTTP and SSE): listing, calls,
`allowed_tools`, every `require_approval` form, approvals through a follow-up response,
parallel calls, tool errors, an unreachable server, headers reaching the server."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import openai
import pytest

from tests.support import store_probe
from tests.support.house import modules_loaded_by
from tests.support.mcp_servers import McpTestServer
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack


def mcp_tool(server: McpTestServer, label: str = "tools", **options: object) -> dict:
    return {"type": "mcp", "server_label": label, "server_url": server.url, **options}


@pytest.mark.parametrize("transport", ["streamable", "sse"])
async def test_list_call_and_answer(
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    model: str,
    transport: str,
    mcp_server: McpTestServer,
    mcp_sse_server: McpTestServer,
):
    server = mcp_server if transport == "streamable" else mcp_sse_server
    backend.script(model, [Reply(tool_calls=[("add", {"a": 2, "b": 3})]), Reply(text="2 + 3 = 5")])
    response = await sdk.responses.create(
        model=model, input="what is 2 + 3?", tools=[mcp_tool(server, require_approval="never")]
    )
    assert response.status == "completed", response.error
    listing, call, message = response.output
    assert listing.type == "mcp_list_tools" and listing.server_label == "tools"
    tools = {tool.name: tool for tool in listing.tools}
    assert tools["add"].description == "Add two integers."
    assert tools["add"].input_schema["properties"].keys() == {"a", "b"}
    assert tools["add"].annotations == {"readOnlyHint": True}
    assert call.type == "mcp_call" and call.name == "add" and call.output == "5" and call.error is None
    assert json.loads(call.arguments) == {"a": 2, "b": 3} and call.server_label == "tools"
    assert response.output_text == "2 + 3 = 5"
    first, second = backend.requests(model)
    assert {tool["function"]["name"] for tool in first["tools"]} == set(tools)
    tool_message = second["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": call.id, "content": "5"}
    assert second["messages"][-2]["tool_calls"][0]["id"] == call.id


@pytest.mark.parametrize(
    ("allowed_tools", "offered"),
    [
        (["add", "weather"], {"add", "weather"}),
        ({"tool_names": ["delete_file"]}, {"delete_file"}),
        ({"read_only": True}, {"add", "weather", "slow", "hang", "line"}),
    ],
    ids=["list", "filter-names", "filter-read-only"],
)
async def test_allowed_tools_limit_the_listing_and_what_the_model_sees(
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    model: str,
    mcp_server: McpTestServer,
    allowed_tools: object,
    offered: set[str],
):
    backend.script(model, [Reply(text="ok")])
    response = await sdk.responses.create(
        model=model, input="hi", tools=[mcp_tool(mcp_server, allowed_tools=allowed_tools)]
    )
    assert {tool.name for tool in response.output[0].tools} == offered
    assert {tool["function"]["name"] for tool in backend.requests(model)[0]["tools"]} == offered


@pytest.mark.parametrize(
    ("require_approval", "gated"),
    [
        (None, {"add", "delete_file"}),  # OpenAI's default: always
        ("always", {"add", "delete_file"}),
        ("never", set()),
        ({"never": {"tool_names": ["add"]}}, {"delete_file"}),
        ({"always": {"tool_names": ["delete_file"]}}, {"delete_file"}),
        ({"never": {"read_only": True}}, {"delete_file"}),
        ({"always": {"tool_names": ["add"]}, "never": {"tool_names": ["delete_file"]}}, {"add"}),
    ],
    ids=["absent", "always", "never", "never-names", "always-names", "never-read-only", "both"],
)
async def test_require_approval_forms(
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    model: str,
    mcp_server: McpTestServer,
    require_approval: object,
    gated: set[str],
):
    options = {} if require_approval is None else {"require_approval": require_approval}
    for tool_name, arguments in (("add", {"a": 1, "b": 1}), ("delete_file", {"path": f"/tmp/{model}"})):
        backend.script(model, [Reply(tool_calls=[(tool_name, arguments)]), Reply(text="done")])
        response = await sdk.responses.create(model=model, input="go", tools=[mcp_tool(mcp_server, **options)])
        assert response.status == "completed"
        if tool_name in gated:
            last = response.output[-1]
            assert last.type == "mcp_approval_request" and last.name == tool_name
            assert json.loads(last.arguments) == arguments and last.server_label == "tools"
            assert not any(item.type == "mcp_call" for item in response.output)
        else:
            assert [item.type for item in response.output] == ["mcp_list_tools", "mcp_call", "message"]
            assert response.output[1].name == tool_name and response.output[1].status == "completed"
        backend.script(model, [])  # the second reply is left unused when the call is gated
        while backend._scripts[model]:
            backend._scripts[model].popleft()
    gated_paths = [arguments["path"] for arguments in mcp_server.calls_of("delete_file")]
    assert (f"/tmp/{model}" in gated_paths) == ("delete_file" not in gated)


async def test_several_servers_in_one_request(
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    model: str,
    mcp_server: McpTestServer,
    mcp_sse_server: McpTestServer,
):
    backend.script(
        model,
        [
            Reply(tool_calls=[("first__add", {"a": 1, "b": 2}), ("second__add", {"a": 3, "b": 4})]),
            Reply(text="3 and 7"),
        ],
    )
    response = await sdk.responses.create(
        model=model,
        input="add",
        tools=[
            mcp_tool(mcp_server, "first", require_approval="never"),
            mcp_tool(mcp_sse_server, "second", require_approval="never", server_description="the same tools, over SSE"),
        ],
    )
    assert [item.type for item in response.output] == [
        "mcp_list_tools",
        "mcp_list_tools",
        "mcp_call",
        "mcp_call",
        "message",
    ]
    calls = {item.server_label: item.output for item in response.output if item.type == "mcp_call"}
    assert calls == {"first": "3", "second": "7"}
    # Tools of the same name on two servers are told apart by their server label.
    names = {tool["function"]["name"] for tool in backend.requests(model)[0]["tools"]}
    assert {"first__add", "second__add", "first__weather", "second__weather"} <= names


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "sequential"])
async def test_calls_of_one_turn_run_in_parallel_when_allowed(
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    model: str,
    parallel: bool,
):
    server = McpTestServer().start()
    try:
        backend.script(
            model,
            [
                Reply(tool_calls=[("slow", {"seconds": 1}), ("slow", {"seconds": 1})]),
                Reply(text="both done"),
            ],
        )
        response = await sdk.responses.create(
            model=model, input="go", parallel_tool_calls=parallel, tools=[mcp_tool(server, require_approval="never")]
        )
    finally:
        server.stop()
    assert response.output_text == "both done"
    assert [item.output for item in response.output if item.type == "mcp_call"] == ["done after 1 s"] * 2
    (first_start, first_end), (second_start, second_end) = sorted(server.intervals)
    overlapping = second_start < first_end
    assert overlapping == parallel


async def test_a_failing_tool_is_an_error_the_model_sees(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(model, [Reply(tool_calls=[("explode", {})]), Reply(text="the tool failed, sorry")])
    response = await sdk.responses.create(
        model=model, input="go", tools=[mcp_tool(mcp_server, require_approval="never")]
    )
    call = response.output[1]
    assert call.type == "mcp_call" and call.status == "failed" and call.output is None
    assert call.error.type == "mcp_tool_execution_error"
    assert "exploded" in json.dumps(call.error.content) or "explode" in json.dumps(call.error.content)
    assert response.status == "completed" and response.output_text == "the tool failed, sorry"
    assert backend.requests(model)[1]["messages"][-1]["content"].startswith("Error:")


async def test_an_unreachable_server_fails_the_response_naming_it(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    from tests.support.processes import free_port

    url = f"http://127.0.0.1:{free_port()}/mcp"
    response = await sdk.responses.create(
        model=model, input="hi", tools=[{"type": "mcp", "server_label": "gone", "server_url": url}]
    )
    assert response.status == "failed"
    assert "gone" in response.error.message and response.error.code == "server_error"
    listing = response.output[0]
    assert listing.type == "mcp_list_tools" and listing.tools == [] and "gone" in listing.error
    assert backend.requests(model) == []  # the model was never asked


async def test_headers_and_authorization_reach_the_server(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(model, [Reply(tool_calls=[("whoami", {})]), Reply(text="ok")])
    response = await sdk.responses.create(
        model=model,
        input="who?",
        tools=[
            mcp_tool(
                mcp_server,
                require_approval="never",
                headers={"X-Api-Key": "key-123"},
                authorization="token-456",
            )
        ],
    )
    assert response.output[1].output == "authorization=yes x-api-key=yes"
    seen = [headers for headers in mcp_server.headers_seen if headers.get("x-api-key") == "key-123"]
    assert seen and all(headers["authorization"] == "Bearer token-456" for headers in seen)
    # The response shows the tool without its secrets.
    tool = response.tools[0]
    assert tool.headers is None and tool.authorization is None and tool.server_label == "tools"


async def test_a_follow_up_reuses_the_listing_of_its_chain(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(model, [Reply(text="first"), Reply(text="second"), Reply(text="third")])
    tools = [mcp_tool(mcp_server, require_approval="never")]
    first = await sdk.responses.create(model=model, input="one", tools=tools)
    second = await sdk.responses.create(model=model, input="two", tools=tools, previous_response_id=first.id)
    third = await sdk.responses.create(model=model, input="three", tools=tools, previous_response_id=second.id)
    assert [item.type for item in first.output] == ["mcp_list_tools", "message"]
    assert [item.type for item in second.output] == ["message"]
    assert [item.type for item in third.output] == ["message"]
    # The model still sees the tools, from the listing the chain kept.
    assert all(len(request["tools"]) == len(first.output[0].tools) for request in backend.requests(model))


async def test_streamed_mcp_events_in_order(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(model, [Reply(tool_calls=[("weather", {"city": "Oslo"})]), Reply(text="sunny, go out")])
    stream = await sdk.responses.create(
        model=model, input="weather?", stream=True, tools=[mcp_tool(mcp_server, require_approval="never")]
    )
    events = [event async for event in stream]
    kinds = [event.type for event in events]
    listing = [kind for kind in kinds if "mcp_list_tools" in kind]
    assert listing == ["response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed"]
    call_events = [event for event in events if getattr(event, "output_index", None) == 1]
    assert [event.type for event in call_events] == [
        "response.output_item.added",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.output_item.done",
    ]
    assert json.loads(call_events[2].arguments) == {"city": "Oslo"}
    assert call_events[-1].item.output == "sunny in Oslo" and call_events[-1].item.status == "completed"
    final = events[-1].response
    assert kinds[-1] == "response.completed" and final.output_text == "sunny, go out"
    assert [item.type for item in final.output] == ["mcp_list_tools", "mcp_call", "message"]
    assert [event.sequence_number for event in events] == list(range(len(events)))


async def test_an_unreachable_server_streams_a_failed_listing(sdk: openai.AsyncOpenAI, model: str):
    from tests.support.processes import free_port

    url = f"http://127.0.0.1:{free_port()}/mcp"
    stream = await sdk.responses.create(
        model=model, input="hi", stream=True, tools=[{"type": "mcp", "server_label": "gone", "server_url": url}]
    )
    events = [event async for event in stream]
    kinds = [event.type for event in events]
    assert "response.mcp_list_tools.failed" in kinds and kinds[-1] == "response.failed"
    assert "gone" in events[-1].response.error.message


async def test_secrets_never_reach_the_store_or_temporal_history_in_clear(
    stack: Stack,
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    model: str,
    mcp_server: McpTestServer,
    temporal_db: Path,
):
    header_secret, token_secret = f"hdr-{uuid.uuid4().hex}", f"tok-{uuid.uuid4().hex}"
    backend.script(model, [Reply(tool_calls=[("whoami", {})]), Reply(text="ok")])
    tool = mcp_tool(
        mcp_server, require_approval="never", headers={"X-Api-Key": header_secret}, authorization=token_secret
    )
    response = await sdk.responses.create(model=model, input="who?", tools=[tool], background=True, stream=True)
    events = [event async for event in response]
    assert events[-1].response.output[1].output == "authorization=yes x-api-key=yes"  # they were used
    assert any(headers.get("x-api-key") == header_secret for headers in mcp_server.headers_seen)
    directories = [temporal_db.parent] + ([stack.store.data_dir] if stack.store.kind == "sqlite" else [])
    files = [path for directory in directories for path in directory.iterdir() if path.is_file()]
    contents = b"".join(path.read_bytes() for path in files)
    assert any(path.name.startswith("temporal.db") for path in files)
    if stack.store.kind != "sqlite":  # every row of every table, as the server hands them out
        contents += await store_probe.everything(stack.settings.database_url)
    assert model.encode() in contents and b"whoami" in contents  # the search does see what is in clear
    assert header_secret.encode() not in contents and token_secret.encode() not in contents


async def test_calls_beyond_max_tool_calls_are_not_run(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(
        model,
        [
            Reply(tool_calls=[("weather", {"city": f"{model}-a"}), ("weather", {"city": f"{model}-b"})]),
            Reply(tool_calls=[("weather", {"city": f"{model}-c"})]),
            Reply(text="that is all I may do"),
        ],
    )
    response = await sdk.responses.create(
        model=model, input="go", max_tool_calls=2, tools=[mcp_tool(mcp_server, require_approval="never")]
    )
    calls = [item for item in response.output if item.type == "mcp_call"]
    assert [call.status for call in calls] == ["completed", "completed", "incomplete"]
    cities = {arguments["city"] for arguments in mcp_server.calls_of("weather")}
    assert {f"{model}-a", f"{model}-b"} <= cities and f"{model}-c" not in cities
    assert "at most 2 tool calls" in backend.requests(model)[2]["messages"][-1]["content"]
    assert response.output_text == "that is all I may do"


def test_the_mcp_sdk_is_loaded_only_by_a_process_that_talks_to_mcp():
    """The MCP SDK is the largest library a worker would import (0.2 s of CPU of its start):
    `worker` and `serve` start without it (`activities/mcp.py` loads it at the first MCP call;
    the tests above make calls through it), and only `dev` loads it at start, for its demo
    tools."""
    sdk = {"mcp", "mcp_types"}
    assert not sdk & modules_loaded_by("worker.cli", "worker.roles", "worker.temporal")
    assert sdk <= modules_loaded_by("worker.dev")
