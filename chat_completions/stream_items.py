"""What the stream assembler (`chat_completions/stream_assembler.py`) keeps of each output item
as it grows, which item types it announces whole, and the events and items it ends them with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from chat_completions.growing_text import Text
from chat_completions.streamed import Streamed
from models.client_tools import CLIENT_KINDS, CLIENT_TOOLS
from models.events import ContentPartEvent, StreamEvent, TextDoneEvent
from models.hosted_tools import HOSTED_ITEM_TYPES, HOSTED_TOOLS
from models.items import (
    CustomToolCallItem,
    McpCallItem,
    OutputFunctionCall,
    OutputItem,
    OutputMessage,
    OutputText,
    ReasoningItem,
    ReasoningText,
)

MCP_KINDS = ("mcp_call", "mcp_approval_request")
SERVER_RUN_KINDS = (*MCP_KINDS, *HOSTED_ITEM_TYPES)
"""Calls this server runs: the chat tool-call id is the item's id."""
WHOLE_KINDS = (*SERVER_RUN_KINDS, "custom_tool_call", *CLIENT_KINDS)
"""Announced whole once the reply is complete (a hosted tool's call by the step that runs it)."""
ID_PREFIX = {
    "message": "msg",
    "reasoning": "rs",
    "function_call": "fc",
    "custom_tool_call": "ctc",
    "mcp_call": "mcp",
    "mcp_approval_request": "mcpr",
    **{hosted.item_type: hosted.id_prefix for hosted in HOSTED_TOOLS},
    **{f"client:{typed.item_type}": typed.id_prefix for typed in CLIENT_TOOLS},
}
TEXT_DELTAS: dict[str, Literal["response.output_text.delta", "response.reasoning_text.delta"]] = {
    "message": "response.output_text.delta",
    "reasoning": "response.reasoning_text.delta",
}


@dataclass
class Item:
    type: str
    output_index: int
    id: str
    call_id: str | None = None
    chat_name: str = ""
    """The function the model called (a client tool's or MCP tool's name as the model sees it)."""
    growing: Text = field(default_factory=Text)
    refusal_text: Text = field(default_factory=Text)
    logprobs: list[dict[str, Any]] = field(default_factory=list)
    unsent_logprobs: list[dict[str, Any]] = field(default_factory=list)
    """Those of the text not in a delta event yet."""
    logprob_chars: int = 0
    """Characters of the text the log probabilities sent so far cover."""
    sent: int = 0  # characters of the text the client has
    earlier: Streamed | None = None

    @property
    def text(self) -> str:
        return str(self.growing)

    @property
    def refusal(self) -> str:
        return str(self.refusal_text)


@dataclass
class HeldRefusal:
    """A message's refusal as a guardrail sees it: text of its own, never streamed, checked
    whole (`guardrails/held_output.py` reads any item this way)."""

    message: Item
    type: str = "refusal"
    sent: int = 0

    @property
    def id(self) -> str:
        return f"{self.message.id}#refusal"

    @property
    def growing(self) -> Text:
        return self.message.refusal_text


def abandoned(earlier: Streamed) -> OutputItem:
    match earlier.type:
        case "mcp_call":
            return McpCallItem(
                id=earlier.id,
                server_label=earlier.server_label,
                name=earlier.name or "",
                arguments=earlier.text,
                status="incomplete",
            )
        case "message":
            return OutputMessage(
                id=earlier.id, status="incomplete", content=[OutputText(type="output_text", text=earlier.text)]
            )
        case "reasoning":
            return ReasoningItem(id=earlier.id, content=[ReasoningText(text=earlier.text)], status="incomplete")
        case "custom_tool_call":
            return CustomToolCallItem(
                id=earlier.id,
                call_id=earlier.call_id or "",
                name=earlier.name or "",
                input=earlier.text,
                namespace=earlier.namespace,
            )
    return OutputFunctionCall(
        id=earlier.id,
        call_id=earlier.call_id or "",
        name=earlier.name or "",
        arguments=earlier.text,
        namespace=earlier.namespace,
        status="incomplete",
    )


def part_done(
    item: Item,
    part: OutputText | ReasoningText,
    text_done: Literal["response.output_text.done", "response.reasoning_text.done"],
) -> list[StreamEvent]:
    """The end of an item's one content part: its whole text, then the part itself."""
    return [
        TextDoneEvent(
            type=text_done,
            item_id=item.id,
            output_index=item.output_index,
            content_index=0,
            text=item.text,
            logprobs=item.logprobs,
        ),
        ContentPartEvent(
            type="response.content_part.done",
            item_id=item.id,
            output_index=item.output_index,
            content_index=0,
            part=part,
        ),
    ]


def called_name(final: OutputItem) -> str:
    """The name a call's item carries (a function's, a custom tool's, an MCP tool's)."""
    name = getattr(final, "name", None)
    return name if isinstance(name, str) else ""
