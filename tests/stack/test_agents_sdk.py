"""The OpenAI Agents SDK against durable-responses: a tool-using agent, run and streamed."""

from __future__ import annotations

import agents

from tests.support.mcp_servers import McpTestServer
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack


def weather_agent(stack: Stack, model: str):
    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    client = stack.sdk()
    return agents.Agent(
        name="weather",
        instructions="Answer about the weather.",
        tools=[get_weather],
        model=agents.OpenAIResponsesModel(model=model, openai_client=client),
    )


async def test_runner_run_uses_function_tools_across_a_chain(stack: Stack, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(tool_calls=[("get_weather", {"city": "Lyon"})]), Reply(text="It is sunny in Lyon.")])
    result = await agents.Runner.run(weather_agent(stack, model), "Weather in Lyon?")
    assert result.final_output == "It is sunny in Lyon."
    tool_messages = [m for m in backend.requests(model)[1]["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "sunny in Lyon"


async def test_runner_run_streamed(stack: Stack, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(tool_calls=[("get_weather", {"city": "Oslo"})]), Reply(text="Oslo is sunny today.")])
    result = agents.Runner.run_streamed(weather_agent(stack, model), "Weather in Oslo?")
    deltas = []
    async for event in result.stream_events():
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            deltas.append(event.data.delta)
    assert "".join(deltas) == result.final_output == "Oslo is sunny today."


async def test_hosted_mcp_tool_with_approval_callback(
    stack: Stack, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    """The Agents SDK's HostedMCPTool: the SDK answers our approval request through its
    callback and a follow-up response, which runs the call."""
    path = f"/tmp/{model}-agents"
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": path})]), Reply(text="Deleted.")])
    asked = []

    def approve(request: agents.MCPToolApprovalRequest) -> agents.MCPToolApprovalFunctionResult:
        asked.append(request.data.name)
        return {"approve": True}

    tool = agents.HostedMCPTool(
        tool_config={
            "type": "mcp",
            "server_label": "files",
            "server_url": mcp_server.url,
            "require_approval": "always",
        },
        on_approval_request=approve,
    )
    agent = agents.Agent(
        name="files",
        instructions="Manage files.",
        tools=[tool],
        model=agents.OpenAIResponsesModel(model=model, openai_client=stack.sdk()),
    )
    result = await agents.Runner.run(agent, "Delete it.")
    assert asked == ["delete_file"] and result.final_output == "Deleted."
    assert mcp_server.calls_of("delete_file").count({"path": path}) == 1
