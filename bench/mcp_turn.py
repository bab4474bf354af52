"""One MCP turn, through durable-responses and directly: a response that lists an MCP
server's tools, calls one and answers, against two chat completions and one MCP session that
lists and calls (`python -m bench.run`'s MCP row)."""

from __future__ import annotations

import openai
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ToolParam
from openai.types.responses.response_output_item import McpCall

from bench import load
from bench.processes import Backend


async def measure(
    backend: Backend, durable: openai.AsyncOpenAI, direct: openai.AsyncOpenAI, count: int, warmup: int
) -> tuple[list[float], list[float]]:
    """(direct, durable) ms of one MCP turn: a response that lists a server, calls one tool and
    answers, against two chat completions and one MCP session that lists and calls."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from tests.support.mcp_servers import McpTestServer

    server = McpTestServer().start()
    tool: ToolParam = {"type": "mcp", "server_label": "bench", "server_url": server.url, "require_approval": "never"}
    backend.script(
        "bench-mcp",
        [
            reply
            for _ in range(count + warmup)
            for reply in ({"tool_calls": [["add", {"a": 1, "b": 2}]]}, {"text": "3"})
        ],
    )
    hi: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]

    async def directly() -> None:
        await direct.chat.completions.create(model="bench", messages=hi)
        async with Client(streamable_http_client(server.url), mode="legacy") as session:
            await session.list_tools()
            await session.call_tool("add", {"a": 1, "b": 2})
        await direct.chat.completions.create(model="bench", messages=hi)

    async def durably() -> None:
        answer = await durable.responses.create(model="bench-mcp", input="add", tools=[tool])
        call = answer.output[1]
        assert answer.status == "completed" and isinstance(call, McpCall) and call.output == "3", answer

    try:
        return await load.alternating(directly, durably, count, warmup)
    finally:
        server.stop()
