"""MCP approvals in tests: an approval-gated MCP tool, and an approval response item."""

from __future__ import annotations

from tests.support.mcp_servers import McpTestServer


def gated(server: McpTestServer) -> list[dict]:
    return [
        {
            "type": "mcp",
            "server_label": "files",
            "server_url": server.url,
            "require_approval": {"never": {"read_only": True}},
        }
    ]


def answer(request_id: str, approve: bool, reason: str | None = None) -> dict:
    item = {"type": "mcp_approval_response", "approval_request_id": request_id, "approve": approve}
    return item | ({"reason": reason} if reason else {})
