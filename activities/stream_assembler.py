"""Pure: chat-completion chunk deltas in, Responses stream events and output items out.

Retries stay coherent. An inference call that is retried (upstream error mid-stream, or a
worker killed and the call run again elsewhere) is told what its turn already streamed
(`Streamed`, read back from the event log). It keeps the output indexes, item ids and
call ids that clients have already seen, never announces an item twice, and emits only
the text beyond what was already sent. When the new attempt's text agrees with what was
sent (a deterministic backend, or the same cached answer), the client sees each character
exactly once. When it disagrees, the deltas after the first attempt's text continue from
the new attempt. The `.done` events and the terminal `response.*` event carry the
authoritative final text, and the SDK's `get_final_response()` uses them. An item the
first attempt started that the new one does not produce is closed with `status:
"incomplete"` and is not part of the final output.

A call of an MCP tool (the model's tool call whose name is in `mcp_functions`) is kept back
until the reply is complete: then it is announced whole, as an `mcp_call` with its
arguments (the call activity goes on from there), or as an `mcp_approval_request`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from activities.chat_format import mcp_item
from models.events import (
    ArgumentsDeltaEvent,
    ArgumentsDoneEvent,
    ContentPartEvent,
    McpArgumentsDoneEvent,
    OutputItemEvent,
    StreamEvent,
    TextDeltaEvent,
    TextDoneEvent,
)
from models.ids import new_id
from models.items import McpCallItem, OutputFunctionCall, OutputItem, OutputMessage, OutputText, Refusal
from models.mcp import McpFunction

MCP_KINDS = ("mcp_call", "mcp_approval_request")
ID_PREFIX = {"message": "msg", "function_call": "fc", "mcp_call": "mcp", "mcp_approval_request": "mcpr"}


@dataclass
class Streamed:
    """What earlier attempts streamed at one output index."""

    type: str
    id: str
    call_id: str | None = None
    name: str | None = None
    server_label: str = ""
    text: str = ""
    part_added: bool = False
    done: bool = False


def streamed_from_events(events: list[dict[str, Any]]) -> dict[int, Streamed]:
    streamed: dict[int, Streamed] = {}
    for event in events:
        index = event.get("output_index")
        if index is None:
            continue
        match event["type"]:
            case "response.output_item.added":
                item = event["item"]
                streamed[index] = Streamed(
                    type=item["type"], id=item["id"], call_id=item.get("call_id"), name=item.get("name"),
                    server_label=item.get("server_label", ""),
                )
            case "response.content_part.added" if index in streamed:
                streamed[index].part_added = True
            case ("response.output_text.delta" | "response.function_call_arguments.delta"
                  | "response.mcp_call_arguments.delta") if index in streamed:
                streamed[index].text += event["delta"]
            case "response.output_item.done" if index in streamed:
                streamed[index].done = True
    return streamed


@dataclass
class _Item:
    type: str
    output_index: int
    id: str
    call_id: str | None = None
    name: str = ""
    text: str = ""
    refusal: str = ""
    sent: int = 0  # characters of `text` the client has
    earlier: Streamed | None = None
    mcp: McpFunction | None = None


@dataclass
class StreamAssembler:
    offset: int
    earlier: dict[int, Streamed] = field(default_factory=dict)
    mcp_functions: dict[str, McpFunction] = field(default_factory=dict)
    items: list[_Item] = field(default_factory=list)
    _message: _Item | None = None
    _calls: dict[int, _Item] = field(default_factory=dict)
    _claimed: set[int] = field(default_factory=set)

    def feed(self, delta: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if delta.get("content") or delta.get("refusal"):
            message = self._message or self._open("message", events)
            message.refusal += delta.get("refusal") or ""
            message.text += delta.get("content") or ""
            events.extend(self._text_beyond_sent(message))
        for call in delta.get("tool_calls") or []:
            item = self._calls.get(call.get("index", 0))
            function = call.get("function") or {}
            if item is None:
                name = function.get("name") or ""
                mcp = self.mcp_functions.get(name)
                kind = "function_call" if mcp is None else "mcp_approval_request" if mcp.requires_approval else "mcp_call"
                item = self._open(kind, events, call_id=call.get("id"), name=name)
                item.mcp = mcp
                self._calls[call.get("index", 0)] = item
            item.text += function.get("arguments") or ""
            events.extend(self._text_beyond_sent(item))
        return events

    def finish(self) -> tuple[list[StreamEvent], list[OutputItem], dict[str, Any]]:
        events: list[StreamEvent] = []
        output: list[OutputItem] = []
        for item in sorted(self.items, key=lambda each: each.output_index):
            final = self._final_item(item)
            output.append(final)
            if item.earlier is not None and item.earlier.done and item.earlier.text == item.text:
                continue  # an earlier attempt finished this very item
            if item.type in MCP_KINDS:
                events.extend(self._announce_mcp(item, final))
                continue
            if item.type == "message":
                part = final.content[0]
                if part.type == "output_text":
                    events.append(TextDoneEvent(item_id=item.id, output_index=item.output_index, content_index=0,
                                                text=item.text))
                    events.append(ContentPartEvent(type="response.content_part.done", item_id=item.id,
                                                   output_index=item.output_index, content_index=0, part=part))
            else:
                events.append(ArgumentsDoneEvent(item_id=item.id, output_index=item.output_index, name=item.name,
                                                 arguments=item.text))
            events.append(OutputItemEvent(type="response.output_item.done", output_index=item.output_index, item=final))
        for index, earlier in sorted(self.earlier.items()):
            if index not in self._claimed and not earlier.done:
                events.append(OutputItemEvent(type="response.output_item.done", output_index=index,
                                              item=_abandoned(earlier)))
        return events, output, self._assistant_message()

    # ---- internals -----------------------------------------------------------------------

    def _announce_mcp(self, item: _Item, final: OutputItem) -> list[StreamEvent]:
        """A complete MCP call as one: added, its arguments, (a request) done."""
        events: list[StreamEvent] = []
        if item.earlier is None:
            added = final.model_copy(update={"arguments": "", "status": "in_progress"}) if item.type == "mcp_call" else final
            events.append(OutputItemEvent(type="response.output_item.added", output_index=item.output_index, item=added))
        if item.type == "mcp_approval_request":
            events.append(OutputItemEvent(type="response.output_item.done", output_index=item.output_index, item=final))
            return events
        already = item.earlier.text if item.earlier is not None else ""
        if item.text.startswith(already) and len(item.text) > len(already):
            events.append(ArgumentsDeltaEvent(type="response.mcp_call_arguments.delta", item_id=item.id,
                                              output_index=item.output_index, delta=item.text[len(already):]))
        events.append(McpArgumentsDoneEvent(item_id=item.id, output_index=item.output_index,
                                            arguments=item.text or "{}"))
        return events

    def _open(self, kind: str, events: list[StreamEvent], *, call_id: str | None = None, name: str = "") -> _Item:
        index = self.offset + len(self.items)
        earlier = self.earlier.get(index)
        if earlier is not None and earlier.type != kind:
            index = max([*self.earlier, *(item.output_index for item in self.items), self.offset - 1]) + 1
            earlier = None
        if earlier is not None:
            self._claimed.add(index)
            item = _Item(kind, index, earlier.id, call_id=earlier.call_id, name=name or earlier.name or "",
                         sent=len(earlier.text), earlier=earlier)
        elif kind in MCP_KINDS:  # announced whole when the reply is complete
            item = _Item(kind, index, new_id(ID_PREFIX[kind]), name=name)
        else:
            item = _Item(kind, index, new_id(ID_PREFIX[kind]), call_id=call_id or new_id("call"), name=name)
            added = (OutputMessage(id=item.id, status="in_progress", content=[]) if kind == "message"
                     else OutputFunctionCall(id=item.id, call_id=item.call_id, name=name, arguments="",
                                             status="in_progress"))
            events.append(OutputItemEvent(type="response.output_item.added", output_index=index, item=added))
        if kind == "message":
            self._message = item
            if earlier is None or not earlier.part_added:
                events.append(ContentPartEvent(type="response.content_part.added", item_id=item.id,
                                               output_index=index, content_index=0,
                                               part=OutputText(type="output_text", text="")))
        self.items.append(item)
        return item

    def _text_beyond_sent(self, item: _Item) -> list[StreamEvent]:
        if len(item.text) <= item.sent or item.type in MCP_KINDS:
            return []
        delta, item.sent = item.text[item.sent:], len(item.text)
        if item.type == "message":
            return [TextDeltaEvent(item_id=item.id, output_index=item.output_index, content_index=0, delta=delta)]
        return [ArgumentsDeltaEvent(item_id=item.id, output_index=item.output_index, delta=delta)]

    def _final_item(self, item: _Item) -> OutputItem:
        if item.type == "message":
            parts: list[Any] = []
            if item.text or not item.refusal:
                parts.append(OutputText(type="output_text", text=item.text))
            if item.refusal:
                parts.append(Refusal(type="refusal", refusal=item.refusal))
            return OutputMessage(id=item.id, content=parts)
        if item.mcp is not None:
            return mcp_item(item.mcp, item.text or "{}", item_id=item.id)
        return OutputFunctionCall(id=item.id, call_id=item.call_id or new_id("call"), name=item.name,
                                  arguments=item.text or "{}")

    def _assistant_message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self._message.text if self._message else None}
        calls = [item for item in self.items if item.type != "message"]
        if calls:
            # An MCP call's chat tool-call id is its item's id (see chat_format.assistant_to_output).
            message["tool_calls"] = [
                {"id": item.id if item.mcp is not None else item.call_id, "type": "function",
                 "function": {"name": item.name, "arguments": item.text or "{}"}}
                for item in calls
            ]
        return message


def _abandoned(earlier: Streamed) -> OutputItem:
    if earlier.type == "mcp_call":
        return McpCallItem(id=earlier.id, server_label=earlier.server_label, name=earlier.name or "",
                           arguments=earlier.text, status="incomplete")
    if earlier.type == "message":
        return OutputMessage(id=earlier.id, status="incomplete", content=[OutputText(type="output_text", text=earlier.text)])
    return OutputFunctionCall(id=earlier.id, call_id=earlier.call_id or "", name=earlier.name or "",
                              arguments=earlier.text, status="incomplete")
