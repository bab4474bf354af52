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

Reasoning (`reasoning_content`, or `reasoning`, in the deltas) streams as a `reasoning` item
of its own, as `response.reasoning_text.delta` events.

Under an output guardrail (`ceiling`), nothing goes out that the guardrail has not passed:
a token's log probabilities go with its text, never before it (a delta carries those of the
tokens it completes), without the alternatives the model did not say (`top_logprobs`: no
check reads them), and a withheld reply keeps only those of the text it keeps; a refusal
is held text too (`held_items`), checked whole before the reply is kept. A call whose item type depends on the
whole call (an MCP tool's, announced as an `mcp_call` or an `mcp_approval_request`; a custom
tool's, whose free text is one JSON string argument to the model) is kept back until the
reply is complete, then announced whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chat_completions.converter import REASONING_KEYS, call_item
from chat_completions.growing_text import Text
from chat_completions.stream_items import (
    ID_PREFIX,
    SERVER_RUN_KINDS,
    TEXT_DELTAS,
    WHOLE_KINDS,
    HeldRefusal,
    Item,
    abandoned,
    called_name,
    part_done,
)
from chat_completions.streamed import Streamed
from chat_completions.tool_table import ToolTable
from models.client_tools import CLIENT_KINDS
from models.events import (
    ArgumentsDeltaEvent,
    ArgumentsDoneEvent,
    ContentPartEvent,
    CustomInputDeltaEvent,
    CustomInputDoneEvent,
    McpArgumentsDoneEvent,
    OutputItemEvent,
    StreamEvent,
    TextDeltaEvent,
)
from models.hosted_tools import HOSTED_ITEM_TYPES
from models.ids import new_id
from models.items import (
    CustomToolCallItem,
    OutputItem,
    OutputMessage,
    OutputText,
    ReasoningItem,
    ReasoningText,
    Refusal,
)
from models.search import Source
from web_search.citations import citation_annotations


@dataclass
class StreamAssembler:
    offset: int
    earlier: dict[int, Streamed] = field(default_factory=dict)
    table: ToolTable = field(default_factory=lambda: ToolTable([]))
    seal: Callable[[str], str] | None = None
    """Seals reasoning into `encrypted_content`, for a client that asked to carry it."""
    sources: list[Source] = field(default_factory=list)
    """Search results shown to the model: its `[n]` become `url_citation` annotations."""
    ceiling: Callable[[Item | HeldRefusal], int] | None = None
    """How much of an item's text may be sent yet (an output guardrail's: `guardrails/
    held_output.py`); None: all of it, as it comes."""
    withheld: bool = False
    """A guardrail blocked the reply: it ends with the text that was sent (`withhold`)."""
    items: list[Item] = field(default_factory=list)
    _message: Item | None = None
    _reasoning: Item | None = None
    _calls: dict[int, Item] = field(default_factory=dict)
    _claimed: set[int] = field(default_factory=set)

    def feed(self, delta: dict[str, Any], logprobs: list[dict[str, Any]] | None = None) -> list[StreamEvent]:
        """The events a chunk makes: an item or a part opened (after the text the items
        before it have pending), a call's arguments delta. A message's or reasoning's text is
        only appended: `pending_deltas` turns what has grown into delta events when the writer
        is ready for them, so a burst of a long reply's chunks costs one event, not one per
        chunk. (A call's arguments are short, and clients show them piece by piece.)"""
        events: list[StreamEvent] = []
        reasoning = next((delta[key] for key in REASONING_KEYS if isinstance(delta.get(key), str) and delta[key]), "")
        if reasoning:
            item = self._reasoning or self._open("reasoning", events)
            item.growing.append(reasoning)
        if delta.get("content") or delta.get("refusal"):
            message = self._message or self._open("message", events)
            message.refusal_text.append(delta.get("refusal") or "")
            message.growing.append(delta.get("content") or "")
            if logprobs:
                if self.ceiling is not None:  # the alternatives the model did not say are not held: not sent
                    logprobs = [{**entry, "top_logprobs": []} for entry in logprobs]
                message.logprobs.extend(logprobs)
                message.unsent_logprobs.extend(logprobs)
        for call in delta.get("tool_calls") or []:
            function = call.get("function") or {}
            called = self._calls.get(call.get("index", 0))
            if called is None:
                chat_name = function.get("name") or ""
                called = self._open(self._kind_of(chat_name), events, call_id=call.get("id"), chat_name=chat_name)
                self._calls[call.get("index", 0)] = called
            called.growing.append(function.get("arguments") or "")
            events.extend(self._text_beyond_sent(called))
        return events

    def held_items(self) -> list[Any]:
        """What an output guardrail reads: the items, and each message's refusal as text of
        its own."""
        refusals = [HeldRefusal(item) for item in self.items if item.type == "message" and item.refusal_text.length]
        return [*self.items, *refusals]

    def pending_deltas(self) -> list[StreamEvent]:
        """The text each message and reasoning has beyond what was sent, as one delta each."""
        events: list[StreamEvent] = []
        for item in self.items:
            if item.growing.length > item.sent and item.type in TEXT_DELTAS:
                events.extend(self._text_beyond_sent(item, logprobs=True))
        return events

    def _sent_logprobs(self, item: Item) -> list[dict[str, Any]]:
        """The log probabilities that go with the text sent so far: all of them without a
        guardrail; under one, those of the tokens the sent text holds whole (the rest wait
        for their text)."""
        if self.ceiling is None:
            taken, item.unsent_logprobs = item.unsent_logprobs, []
            return taken
        count = 0
        for logprob in item.unsent_logprobs:
            covered = item.logprob_chars + len(str(logprob.get("token") or ""))
            if covered > item.sent:
                break
            item.logprob_chars = covered
            count += 1
        taken, item.unsent_logprobs = item.unsent_logprobs[:count], item.unsent_logprobs[count:]
        return taken

    def withhold(self) -> list[StreamEvent]:
        """A guardrail blocked the reply: each text keeps only what passed (what may be sent),
        calls are left out (one the client saw begin is closed `incomplete`); the events that
        close them."""
        events: list[StreamEvent] = []
        kept: list[Item] = []
        for item in self.items:
            if item.type in TEXT_DELTAS:
                # What passed is what is kept (an earlier attempt's sent text passed then: a
                # retried call's own text is kept only as far as its checks passed it).
                passed = self.ceiling(item) if self.ceiling is not None else item.sent
                if item.growing.length > passed:
                    item.growing = Text(str(item.growing)[:passed])
                # The log probabilities of the text it keeps, no more (those sent went with it).
                item.logprobs = item.logprobs[: len(item.logprobs) - len(item.unsent_logprobs)]
                item.unsent_logprobs = []
                refusal = HeldRefusal(item)
                if self.ceiling is None or self.ceiling(refusal) < item.refusal_text.length:
                    item.refusal_text = Text()  # a refusal no check passed is not kept
                kept.append(item)
            elif item.type not in WHOLE_KINDS:
                started = call_item(self.table, item.chat_name, "", call_id=item.call_id, item_id=item.id)
                events.append(
                    OutputItemEvent(
                        type="response.output_item.done",
                        output_index=item.output_index,
                        item=started.model_copy(update={"status": "incomplete"}),
                    )
                )
        self.items, self.withheld = kept, True
        self._calls = {}
        return events

    def finish(self) -> tuple[list[StreamEvent], list[OutputItem], dict[str, Any]]:
        events: list[StreamEvent] = self.pending_deltas()
        output: list[OutputItem] = []
        for item in sorted(self.items, key=lambda each: each.output_index):
            events.extend(self._text_beyond_sent(item))  # a call's arguments a guardrail held
            final = self._final_item(item)
            if self.withheld:
                final = final.model_copy(update={"status": "incomplete"})
            output.append(final)
            if item.earlier is not None and item.earlier.done and item.earlier.text == self._streamed_text(item, final):
                continue  # an earlier attempt finished this very item
            if item.type in HOSTED_ITEM_TYPES:
                continue  # announced by the step that runs it
            if item.type in WHOLE_KINDS:
                events.extend(self._announce_whole(item, final))
                continue
            match item.type:
                case "message":
                    part = final.content[0] if isinstance(final, OutputMessage) and final.content else None
                    if part is not None and part.type == "output_text":
                        events.extend(part_done(item, part, "response.output_text.done"))
                case "reasoning":
                    events.extend(part_done(item, ReasoningText(text=item.text), "response.reasoning_text.done"))
                case _:
                    events.append(
                        ArgumentsDoneEvent(
                            item_id=item.id,
                            output_index=item.output_index,
                            name=called_name(final),
                            arguments=item.text or "{}",
                        )
                    )
            events.append(OutputItemEvent(type="response.output_item.done", output_index=item.output_index, item=final))
        for index, earlier in sorted(self.earlier.items()):
            if index not in self._claimed and not earlier.done:
                events.append(
                    OutputItemEvent(type="response.output_item.done", output_index=index, item=abandoned(earlier))
                )
        return events, output, self._assistant_message()

    # ---- internals -----------------------------------------------------------------------

    def _kind_of(self, chat_name: str) -> str:
        hosted = self.table.hosted.get(chat_name)
        if hosted is not None:
            return hosted.item_type
        typed = self.table.typed.get(chat_name)
        if typed is not None:
            return f"client:{typed.item_type}"
        mcp = self.table.mcp.get(chat_name)
        if mcp is not None:
            return "mcp_approval_request" if mcp.requires_approval else "mcp_call"
        client = self.table.client.get(chat_name)
        return "custom_tool_call" if client is not None and client.kind == "custom" else "function_call"

    @staticmethod
    def _streamed_text(item: Item, final: OutputItem) -> str:
        """The text of the item as a stream shows it (a custom tool's input, not its JSON)."""
        return final.input if isinstance(final, CustomToolCallItem) else item.text

    def _announce_whole(self, item: Item, final: OutputItem) -> list[StreamEvent]:
        """A complete call as one: added, its arguments or input, (a request) done."""
        events: list[StreamEvent] = []
        if item.earlier is None:
            blank = {
                "mcp_call": {"arguments": "", "status": "in_progress"},
                "custom_tool_call": {"input": ""},
                **{kind: {"status": "in_progress"} for kind in CLIENT_KINDS},
            }
            added = final.model_copy(update=blank.get(item.type, {}))
            events.append(
                OutputItemEvent(type="response.output_item.added", output_index=item.output_index, item=added)
            )
        if item.type in ("mcp_approval_request", *CLIENT_KINDS):
            events.append(OutputItemEvent(type="response.output_item.done", output_index=item.output_index, item=final))
            return events
        already = item.earlier.text if item.earlier is not None else ""
        text = self._streamed_text(item, final)
        beyond = text[len(already) :] if text.startswith(already) else ""
        if item.type == "custom_tool_call":
            if beyond:
                events.append(CustomInputDeltaEvent(item_id=item.id, output_index=item.output_index, delta=beyond))
            events.append(CustomInputDoneEvent(item_id=item.id, output_index=item.output_index, input=text))
            events.append(OutputItemEvent(type="response.output_item.done", output_index=item.output_index, item=final))
            return events
        if beyond:
            events.append(
                ArgumentsDeltaEvent(
                    type="response.mcp_call_arguments.delta",
                    item_id=item.id,
                    output_index=item.output_index,
                    delta=beyond,
                )
            )
        events.append(McpArgumentsDoneEvent(item_id=item.id, output_index=item.output_index, arguments=text or "{}"))
        return events

    def _open(self, kind: str, events: list[StreamEvent], *, call_id: str | None = None, chat_name: str = "") -> Item:
        events.extend(self.pending_deltas())  # the items before it have their text out first
        index = self.offset + len(self.items)
        earlier = self.earlier.get(index)
        if earlier is not None and earlier.type != kind:
            index = max([*self.earlier, *(item.output_index for item in self.items), self.offset - 1]) + 1
            earlier = None
        if earlier is not None:
            self._claimed.add(index)
            item = Item(
                kind,
                index,
                earlier.id,
                call_id=earlier.call_id,
                chat_name=chat_name,
                sent=len(earlier.text),
                earlier=earlier,
            )
        elif kind in WHOLE_KINDS:  # announced whole when the reply is complete
            item = Item(kind, index, new_id(ID_PREFIX[kind]), call_id=call_id or new_id("call"), chat_name=chat_name)
        else:
            item = Item(kind, index, new_id(ID_PREFIX[kind]), call_id=call_id or new_id("call"), chat_name=chat_name)
            events.append(
                OutputItemEvent(type="response.output_item.added", output_index=index, item=self._started(item))
            )
        if kind in ("message", "reasoning"):
            if kind == "message":
                self._message = item
            else:
                self._reasoning = item
            if earlier is None or not earlier.part_added:
                part = OutputText(type="output_text", text="") if kind == "message" else ReasoningText(text="")
                events.append(
                    ContentPartEvent(
                        type="response.content_part.added",
                        item_id=item.id,
                        output_index=index,
                        content_index=0,
                        part=part,
                    )
                )
        self.items.append(item)
        return item

    def _started(self, item: Item) -> OutputItem:
        match item.type:
            case "message":
                return OutputMessage(id=item.id, status="in_progress", content=[])
            case "reasoning":
                return ReasoningItem(id=item.id, content=[], status="in_progress")
        started = call_item(self.table, item.chat_name, "", call_id=item.call_id, item_id=item.id)
        return started.model_copy(update={"status": "in_progress"})

    def _text_beyond_sent(self, item: Item, *, logprobs: bool = False) -> list[StreamEvent]:
        total = item.growing.length
        length = total if self.ceiling is None else min(total, self.ceiling(item))
        if length <= item.sent or item.type in WHOLE_KINDS:
            return []
        delta = item.growing.tail(total - item.sent)
        if length < total:
            delta = delta[: length - item.sent]
        item.sent = length
        if item.type in TEXT_DELTAS:  # built as validated values: one per write of a long reply
            return [
                TextDeltaEvent.model_construct(
                    type=TEXT_DELTAS[item.type],
                    item_id=item.id,
                    output_index=item.output_index,
                    content_index=0,
                    delta=delta,
                    logprobs=self._sent_logprobs(item) if logprobs else [],
                )
            ]
        return [ArgumentsDeltaEvent(item_id=item.id, output_index=item.output_index, delta=delta)]

    def _final_item(self, item: Item) -> OutputItem:
        match item.type:
            case "message":
                parts: list[Any] = []
                if item.text or not item.refusal:
                    parts.append(
                        OutputText(
                            type="output_text",
                            text=item.text,
                            logprobs=item.logprobs,
                            annotations=citation_annotations(item.text, self.sources),
                        )
                    )
                if item.refusal:
                    parts.append(Refusal(type="refusal", refusal=item.refusal))
                return OutputMessage(id=item.id, content=parts)
            case "reasoning":
                return ReasoningItem(
                    id=item.id,
                    content=[ReasoningText(text=item.text)],
                    encrypted_content=self.seal(item.text) if self.seal else None,
                )
        return call_item(self.table, item.chat_name, item.text or "{}", call_id=item.call_id, item_id=item.id)

    def _assistant_message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self._message.text if self._message else None}
        if self._reasoning is not None:
            message["reasoning_content"] = self._reasoning.text
        calls = [item for item in self.items if item.type not in ("message", "reasoning")]
        if calls:
            # An MCP call's chat tool-call id is its item's id (see converter.assistant_to_output).
            message["tool_calls"] = [
                {
                    "id": item.id if item.type in SERVER_RUN_KINDS else item.call_id,
                    "type": "function",
                    "function": {"name": item.chat_name, "arguments": item.text or "{}"},
                }
                for item in calls
            ]
        return message
