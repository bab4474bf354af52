"""Remote MCP tools against real MCP servers (streamable HTTP and SSE): listing, calls,
`allowed_tools`, every `require_approval` form, approvals through a follow-up response,
parallel calls, tool errors, an unreachable server, headers reaching the server."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tests.conftest import Stack
from tests.mcp_servers import McpTestServer
from tests.scripted_backend import Reply, ScriptedBackend


def mcp_tool(server: McpTestServer, label: str = "tools", **options: object) -> dict:
    return {"type": "mcp", "server_label": label, "server_url": server.url, **options}


@pytest.mark.parametrize("transport", ["streamable", "sse"])
async def test_list_call_and_answer(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, transport: str,
    mcp_server: McpTestServer, mcp_sse_server: McpTestServer,
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
