"""A session with one remote MCP server, and what its failures mean.

The transport follows the URL, as most MCP clients do: a path ending in `/sse` is the
older HTTP+SSE transport, anything else streamable HTTP. Every failure leaves as an
`McpServerError` that says whether retrying can help.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlparse

import httpx2
import mcp_types
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from access.egress import EgressPolicy, EgressRefusedError, ReplyTooLargeError, guarded_http_client
from models.errors import McpRejectedError, McpServerError, McpUnreachableError
from models.items import McpListedTool

RETRYABLE_STATUS = frozenset({408, 429})
INTERNAL_ERROR = -32603
# The initialize handshake every MCP server speaks; the 2026-07-28 protocol drops `ping`,
# which a long call needs to tell a working server from a hung one.
PROTOCOL_MODE = "legacy"
CONNECT_TIMEOUT_SECONDS = 10.0
MAX_RESULT_BYTES = 12 * 1024 * 1024
"""The largest message a streamable-HTTP MCP server may send (a tool result, as one JSON body
or one event of a stream), by default (MCP_MAX_RESULT_BYTES): an endless reply costs about
that much memory and a few MiB more (under 20 MiB, `tests/stack/test_bounds.py`), then fails the
call. It still takes a 5 MB text result, which FastMCP servers send twice in one message
(as `content` and as `structuredContent`). The SDK's legacy SSE transport keeps its own 1 MiB."""


def is_sse(url: str) -> bool:
    return urlparse(url).path.rstrip("/").endswith("/sse")


@asynccontextmanager
async def connected(
    label: str,
    url: str,
    headers: dict[str, str],
    *,
    egress: EgressPolicy,
    max_result_bytes: int = MAX_RESULT_BYTES,
) -> AsyncIterator[Client]:
    """An initialized MCP client session over connections the egress policy allows; failures
    to connect raise `McpServerError`."""
    # No read timeout: a tool may take hours. A server that stops answering is found by the
    # caller's pings (see activities/mcp.py), a hung listing by its activity's timeout.
    timeout = httpx2.Timeout(CONNECT_TIMEOUT_SECONDS, read=None)
    # The SDK turns an HTTP error answer to a request into a JSON-RPC error that has lost its
    # status; the status is noted here, so a 502 is still told from the server's own error.
    failed_statuses: list[int] = []

    async def note_status(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            failed_statuses.append(response.status_code)

    def http_client(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        return guarded_http_client(
            egress,
            headers=headers,
            timeout=timeout,
            auth=auth,
            event_hooks={"response": [note_status]},
            max_reply_bytes=max_result_bytes,
        )

    try:
        if is_sse(url):
            async with Client(
                sse_client(
                    url,
                    headers=headers,
                    timeout=CONNECT_TIMEOUT_SECONDS,
                    sse_read_timeout=24 * 3600,
                    httpx_client_factory=http_client,
                ),
                mode=PROTOCOL_MODE,
            ) as client:
                yield client
        else:
            async with http_client(headers=headers, timeout=timeout) as http:
                transport = streamable_http_client(url, http_client=http, max_sse_event_size=max_result_bytes)
                async with Client(transport, mode=PROTOCOL_MODE) as client:
                    yield client
    except Exception as error:  # noqa: BLE001 - every failure is classified
        raise classify(label, error, failed_statuses[-1] if failed_statuses else None) from error


def classify(label: str, error: BaseException, http_status: int | None = None) -> McpServerError:
    """Whether retrying can help: connection failures, timeouts, 408/429/5xx can.
    `http_status`: the last HTTP error status the server answered in this session."""
    leaf = _first_leaf(error)
    where = f"MCP server '{label}'"
    if isinstance(leaf, McpServerError):
        return leaf
    if isinstance(leaf, MCPError) and leaf.error.code == INTERNAL_ERROR and http_status is not None:
        leaf = httpx2.HTTPStatusError(
            f"HTTP {http_status}", request=httpx2.Request("POST", "http://mcp"), response=httpx2.Response(http_status)
        )
    if isinstance(leaf, httpx2.InvalidURL | httpx2.UnsupportedProtocol):
        return McpRejectedError(f"{where} has a URL this server cannot use ({leaf})", code=400)
    if isinstance(leaf, ReplyTooLargeError):
        return McpRejectedError(f"{where} answered more than {leaf.limit} bytes (MCP_MAX_RESULT_BYTES)", code=502)
    if isinstance(leaf, EgressRefusedError):
        return McpRejectedError(f"{where} may not be reached from this server (egress policy)", code=403)
    if isinstance(leaf, httpx2.HTTPStatusError):
        status = leaf.response.status_code
        message = f"{where} answered HTTP {status}"
        if status in RETRYABLE_STATUS or status >= 500:
            return McpUnreachableError(message, code=status)
        return McpRejectedError(message, code=status)
    if isinstance(leaf, httpx2.TimeoutException | TimeoutError):
        return McpUnreachableError(f"{where} did not answer in time", code=504)
    if isinstance(leaf, httpx2.TransportError | OSError):
        return McpUnreachableError(f"{where} cannot be reached: {leaf or type(leaf).__name__}", code=502)
    if isinstance(leaf, MCPError):
        return McpRejectedError(
            f"{where} answered with an error: {leaf.error.message}", code=leaf.error.code, protocol=True
        )
    return McpUnreachableError(f"{where} failed: {type(leaf).__name__}: {leaf}", code=502)


def _first_leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def listed_tool(tool: mcp_types.Tool) -> McpListedTool:
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
    return McpListedTool(
        name=tool.name, input_schema=tool.input_schema or {}, description=tool.description, annotations=annotations
    )


def output_text(result: mcp_types.CallToolResult) -> str:
    """A tool result as text, as OpenAI's `mcp_call.output` carries it."""
    texts = [block.text for block in result.content if isinstance(block, mcp_types.TextContent)]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return json.dumps(result.structured_content)
    return json.dumps(content_json(result))


def content_json(result: mcp_types.CallToolResult) -> list[dict[str, Any]]:
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
