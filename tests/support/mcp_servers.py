"""Real MCP servers for the tests: the `mcp` package's `MCPServer`, served by uvicorn over
streamable HTTP or SSE in a thread of its own (so it keeps answering whatever the test's
loop does). It records every HTTP request's headers and every tool call."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from starlette.types import Message, Receive, Scope, Send

from tests.support.threaded_server import ThreadedServer

READ_ONLY = mcp_types.ToolAnnotations(readOnlyHint=True)
DESTRUCTIVE = mcp_types.ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False)


PLAY = ("All the world's a stage.", "Then the villain says: now I will murder the king.")
"""The lines `line` says: the second is one a moderation classifier flags (its arguments never are)."""


@dataclass
class McpTestServer:
    transport: Literal["streamable", "sse"] = "streamable"
    name: str = "test-tools"
    headers_seen: list[dict[str, str]] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    call_metas: list[dict[str, Any]] = field(default_factory=list)
    """The `_meta` of each `tools/call` request, as it came over the wire."""
    intervals: list[tuple[float, float]] = field(default_factory=list)
    """(start, end) of each `slow` call, by the monotonic clock."""
    fail_after_running: set[str] = field(default_factory=set)
    """Tools whose calls run, and then are answered HTTP 502 instead of their result: the
    proxy in front of the server failed after the tool acted."""
    endless_pages: bool = False
    """`tools/list` never ends: every page names a next one."""
    endless_reply: set[str] = field(default_factory=set)
    """Tools whose calls are answered with a JSON body that never ends (64 KiB a piece)."""
    port: int = 0
    tool_count: int = 0
    """Extra tools (`tool_<n>`) to list, each with a description of `description_size` characters."""
    description_size: int = 0
    description: str | None = None
    """The extra tools' description, when given (instead of `description_size` characters)."""

    def __post_init__(self) -> None:
        self._server: ThreadedServer | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        path = "/sse" if self.transport == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    def calls_of(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [arguments for called, arguments in self.calls if called == name]

    def _record(self, name: str, arguments: dict[str, Any]) -> None:
        with self._lock:
            self.calls.append((name, arguments))

    def build(self) -> MCPServer:
        server = EndlessPages(self.name) if self.endless_pages else MCPServer(self.name)

        @server.tool(description="Add two integers.", annotations=READ_ONLY)
        def add(a: int, b: int) -> int:
            self._record("add", {"a": a, "b": b})
            return a + b

        @server.tool(description="Look up the weather in a city.", annotations=READ_ONLY)
        def weather(city: str) -> str:
            self._record("weather", {"city": city})
            return f"sunny in {city}"

        @server.tool(description="Delete a file. Cannot be undone.")
        def delete_file(path: str) -> str:
            self._record("delete_file", {"path": path})
            return f"deleted {path}"

        @server.tool(description="Fail, always.")
        def explode() -> str:
            self._record("explode", {})
            raise ValueError("the tool exploded")

        @server.tool(description="Take a while, then answer.", annotations=READ_ONLY)
        async def slow(seconds: float) -> str:
            self._record("slow", {"seconds": seconds})
            started = time.monotonic()
            await asyncio.sleep(seconds)
            with self._lock:
                self.intervals.append((started, time.monotonic()))
            return f"done after {seconds:g} s"

        @server.tool(description="Take a while, then delete a file.", annotations=DESTRUCTIVE)
        async def slow_delete(path: str, seconds: float) -> str:
            self._record("slow_delete", {"path": path, "seconds": seconds})
            await asyncio.sleep(seconds)
            return f"deleted {path} after {seconds:g} s"

        @server.tool(description="Hang the whole server: it answers nothing for a while.", annotations=READ_ONLY)
        async def hang(seconds: float) -> str:
            self._record("hang", {"seconds": seconds})
            time.sleep(seconds)  # blocks the server's event loop: pings go unanswered
            return "woke up"

        @server.tool(description="Answer with this many characters.")
        def big(size: int) -> str:
            self._record("big", {"size": size})
            return "x" * size

        @server.tool(description="Say a line of the play, by its number.", annotations=READ_ONLY)
        def line(number: int) -> str:
            self._record("line", {"number": number})
            return PLAY[number % len(PLAY)]

        @server.tool(description="Say how long a text is.")
        def measure(text: str) -> str:
            self._record("measure", {"length": len(text)})
            return f"{len(text)} characters"

        @server.tool(description="Say which credentials came with this call (not their values).")
        def whoami() -> str:
            self._record("whoami", {})
            with self._lock:
                last = self.headers_seen[-1] if self.headers_seen else {}
            return " ".join(f"{name}={'yes' if last.get(name) else 'no'}" for name in ("authorization", "x-api-key"))

        for number in range(self.tool_count):
            server.add_tool(
                lambda: "", name=f"tool_{number}", description=self.description or "d" * self.description_size
            )
        return server

    def _failing_after(self, send: Send, called: list[str]) -> Send:
        """`send`, answering 502 instead of the result of a call to a tool in `fail_after_running`."""
        replaced = False

        async def sending(message: Message) -> None:
            nonlocal replaced
            if called and called[0] in self.endless_reply:
                if message["type"] == "http.response.start" and not replaced:
                    replaced = True
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 200,
                            "headers": [(b"content-type", b"application/json")],
                        }
                    )
                    piece = (
                        b'{"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "' + b"x" * 65536
                    )
                    for _ in range(16384):  # 1 GiB, or until the client goes away
                        try:
                            await send({"type": "http.response.body", "body": piece, "more_body": True})
                        except Exception:  # noqa: BLE001 - the client left
                            return None
                        piece = b"x" * 65536
                        await asyncio.sleep(0)
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return None
            if not (called and called[0] in self.fail_after_running):
                await send(message)
                return None
            if message["type"] == "http.response.start":
                await send(
                    {"type": "http.response.start", "status": 502, "headers": [(b"content-type", b"text/plain")]}
                )
            elif message["type"] == "http.response.body" and not replaced:
                replaced = True
                await send({"type": "http.response.body", "body": b"bad gateway", "more_body": False})

        return sending

    def _reading_calls(self, receive: Receive, called: list[str]) -> Receive:
        """`receive`, noting the `_meta` of a `tools/call` request body as it passes (and the
        tool's name in `called`)."""
        body = bytearray()

        async def receiving() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body") and b'"tools/call"' in body:
                    try:
                        request = json.loads(body)
                    except ValueError:
                        request = None
                    if isinstance(request, dict) and request.get("method") == "tools/call":
                        called.append(str(request.get("params", {}).get("name")))
                        with self._lock:
                            self.call_metas.append(dict(request.get("params", {}).get("_meta") or {}))
            return message

        return receiving

    def start(self) -> McpTestServer:
        server = self.build()
        # Large enough for the tests' 5 MB arguments (the SDK's default is 4 MiB).
        limit = 64 * 1024 * 1024
        app = (
            server.sse_app(max_request_body_size=limit)
            if self.transport == "sse"
            else server.streamable_http_app(max_request_body_size=limit)
        )

        async def recording(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                headers = {key.decode().lower(): value.decode() for key, value in scope["headers"]}
                with self._lock:
                    self.headers_seen.append(headers)
                called: list[str] = []
                receive = self._reading_calls(receive, called)
                send = self._failing_after(send, called)
            await app(scope, receive, send)

        self._server = ThreadedServer(recording, f"mcp-{self.transport}").start()
        self.port = self._server.port
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()


class EndlessPages(MCPServer):
    """A server whose tool list never ends: each page holds one tool and names the next."""

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        page = int(params.cursor) if params is not None and params.cursor else 0
        tool = mcp_types.Tool(name=f"page_{page}", input_schema={"type": "object"})
        return mcp_types.ListToolsResult(tools=[tool], next_cursor=str(page + 1))
