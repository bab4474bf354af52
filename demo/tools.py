"""A small MCP server of harmless tools, served by `dev` at `/demo/mcp`, so remote MCP tools
and approvals can be tried without running an MCP server of one's own:

    tools=[{"type": "mcp", "server_label": "demo", "server_url": "http://127.0.0.1:8000/demo/mcp"}]

It is the `mcp` package's own server over streamable HTTP, stateless (each call stands
alone, so a call made again after a restart needs no session from before).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import mcp_types
from mcp.server.mcpserver import MCPServer
from starlette.routing import Mount

DEMO_TOOLS_PATH = "/demo"
MAX_WAIT_SECONDS = 3600.0

_READ_ONLY = mcp_types.ToolAnnotations(readOnlyHint=True)


def demo_tools_server() -> MCPServer:
    server = MCPServer("durable-responses-demo", instructions="Harmless tools for trying durable-responses.")

    @server.tool(description="Roll a die with this many sides (6 unless told).", annotations=_READ_ONLY)
    def roll_dice(sides: int = 6) -> str:
        sides = max(2, min(sides, 1_000_000))
        return f"rolled a {random.randint(1, sides)} on a {sides}-sided die"

    @server.tool(description="The server's current time, in UTC.", annotations=_READ_ONLY)
    def current_time() -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())

    @server.tool(
        description="Wait this many seconds (at most an hour), then answer: a long tool call that survives a restart.",
        annotations=_READ_ONLY,
    )
    async def wait(seconds: float) -> str:
        seconds = max(0.0, min(seconds, MAX_WAIT_SECONDS))
        await asyncio.sleep(seconds)
        return f"waited {seconds:g} s"

    @server.tool(description="Pretend to delete a file (nothing is deleted): a tool you would want to approve.")
    def delete_file(path: str) -> str:
        return f"pretended to delete {path}"

    return server


@asynccontextmanager
async def demo_tools_mount(host: str = "127.0.0.1") -> AsyncIterator[Mount]:
    """The demo MCP server as a mount for the API's app, running while the context is open.
    On a loopback `host` it refuses other Host headers (the `mcp` package's DNS-rebinding guard)."""
    server = demo_tools_server()
    app = server.streamable_http_app(stateless_http=True, host=host)
    async with server.session_manager.run():
        yield Mount(DEMO_TOOLS_PATH, app=app)
