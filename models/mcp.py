"""What the workflow and its activities share about MCP servers: listings kept for a chain,
the tools the model may call, and decisions on approval requests."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from models.items import McpApprovalRequestItem, McpListToolsItem


class McpListing(BaseModel):
    """A server's tool listing, as a response and the rest of its chain see it."""

    server_url: str
    item: McpListToolsItem


class McpFunction(BaseModel):
    """One MCP tool as the model sees it: a chat-completions function."""

    function_name: str
    server_label: str
    tool_name: str
    requires_approval: bool
    description: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    parked_in: str | None = None
    """The listing whose parked fields hold this tool's description and parameters (a large
    listing travels as a stub); the model call reads them back."""

    def chat_tool(self) -> dict[str, Any]:
        function: dict[str, Any] = {"name": self.function_name, "parameters": self.parameters or {"type": "object"}}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}


class ApprovalDecision(BaseModel):
    """A client's answer to an approval request; `approve` is None when the client moved on
    without answering (the call is then not run)."""

    request: McpApprovalRequestItem
    approve: bool | None
    reason: str | None = None
    decided_by: str | None = None
    """The id of the API key that decided (None while the server runs open, or unanswered)."""

    def refusal_text(self) -> str:
        """What the model is told about a call that was not approved."""
        if self.approve is None:
            return "The call was not run: the user did not approve it."
        reason = f" Reason: {self.reason}" if self.reason else ""
        return f"The user denied this tool call.{reason}"
