"""The bed's MCP server and webhook receiver.

The MCP server (`/mcp`) has `write_note` (destructive: it changes the world, and may not run
twice for one approved call), `read_note` and `wait` (read-only; `wait` gives a steer time to
land). Every `tools/call` that reaches it
is logged, as it arrived and before it runs, to a file of the bed's history: its time, tool,
arguments and `_meta` (where the idempotency key is). A request that arrives is counted as
a run, whatever happens after: the checker's count is never less than the world's.

The webhook receiver (`POST /webhook`) logs each delivery as it arrived (its `webhook-id`,
event type and response id) to another file of the history, and answers 200.

    python -m bench.cluster.tools_node --host ADDRESS --port PORT --calls FILE --webhooks FILE"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import mcp_types
import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import Message, Receive, Scope, Send

DESTRUCTIVE = mcp_types.ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False)
READ_ONLY = mcp_types.ToolAnnotations(readOnlyHint=True)


def tools() -> MCPServer:
    server = MCPServer("bed-tools")
    notes: dict[str, str] = {}

    @server.tool(description="Write a note under a key. Cannot be undone.", annotations=DESTRUCTIVE)
    def write_note(key: str, text: str) -> str:
        notes[key] = text
        return f"wrote {key}"

    @server.tool(description="Read the note under a key.", annotations=READ_ONLY)
    def read_note(key: str) -> str:
        return notes.get(key, "(none)")

    @server.tool(description="Wait a few seconds (at most 5), then say so.", annotations=READ_ONLY)
    async def wait(seconds: float) -> str:
        await asyncio.sleep(min(max(seconds, 0.0), 5.0))
        return f"waited {seconds:g} s"

    return server


class CallLog:
    """Each `tools/call` request's body, logged as one JSON line as soon as it has arrived."""

    def __init__(self, app: Any, path: Path) -> None:
        self.app = app
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = path.open("a", buffering=1)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()

        async def receiving() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body"):
                    self._log(bytes(body))
            return message

        await self.app(scope, receiving, send)

    def _log(self, body: bytes) -> None:
        try:
            request = json.loads(body)
        except ValueError:
            return
        if not isinstance(request, dict) or request.get("method") != "tools/call":
            return
        params = request.get("params") or {}
        line = {
            "time": time.time(),
            "tool": params.get("name"),
            "arguments": params.get("arguments") or {},
            "meta": params.get("_meta") or {},
        }
        self.file.write(json.dumps(line) + "\n")


class WebhookReceiver:
    """`POST /webhook`: each delivery logged as one JSON line, then answered 200; anything
    else goes on to `app`."""

    def __init__(self, app: Any, path: Path) -> None:
        self.app = app
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = path.open("a", buffering=1)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/webhook":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            body.extend(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        try:
            event = json.loads(body)
        except ValueError:
            event = {}
        line = {
            "time": time.time(),
            "id": headers.get("webhook-id", ""),
            "type": event.get("type", ""),
            "response_id": (event.get("data") or {}).get("id", ""),
        }
        self.file.write(json.dumps(line) + "\n")
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--calls", type=Path, required=True)
    parser.add_argument("--webhooks", type=Path, required=True)
    options = parser.parse_args()
    mcp_app = CallLog(tools().streamable_http_app(host=options.host, stateless_http=True), options.calls)
    app = WebhookReceiver(mcp_app, options.webhooks)
    uvicorn.run(app, host=options.host, port=options.port, log_level="warning")


if __name__ == "__main__":
    main()
