"""The chat messages a turn sends, put in order in one place: the API sizes a request's first
turn with them (`response_service/context_size.py`) and the model's call sends them
(`activities/inference.py`), so what is refused for its length is what would have been sent.

In order: the conversation's items (`conversation`), then the turn's own context (`context`,
what its chat context keeps): the chain's context so far, the results of calls the previous
response left open, then the new input (a first turn, or one that starts over), or the
results of this response's calls (a later turn). A compaction summary cuts everything before
it (`context/compaction.py`). Pure."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from chat_completions.converter import ChatMessage, items_to_messages, tool_messages
from chat_completions.tool_table import ToolTable
from context import compaction
from models.items import CompactionItem

Compacted = Callable[[CompactionItem], list[ChatMessage]]


@dataclass(frozen=True)
class TurnMessages:
    conversation: list[ChatMessage]
    context: list[ChatMessage]

    @property
    def sent(self) -> list[ChatMessage]:
        """What the backend is sent: from the latest compaction summary on."""
        return compaction.from_latest(self.conversation + self.context)


def turn_messages(
    table: ToolTable,
    *,
    conversation: list[Any],
    known_context: list[ChatMessage],
    inputs: list[Any] | None,
    tool_results: Mapping[str, str],
    compacted: Compacted | None,
) -> TurnMessages:
    """`inputs`: the request's input items, for a turn that reads them (None: a later turn,
    whose context is the chain's so far and its calls' results)."""
    said = items_to_messages(conversation, table, compacted=compacted)
    if inputs is None:
        return TurnMessages(said, known_context + tool_messages(tool_results))
    # Results of calls the previous response left open (approved, refused, unanswered)
    # follow its context; those of requests passed back in `input` follow them there.
    passed_back = {item.id for item in inputs if item.type == "mcp_approval_request"}
    closing = {call_id: text for call_id, text in tool_results.items() if call_id not in passed_back}
    return TurnMessages(
        said,
        known_context + tool_messages(closing) + items_to_messages(inputs, table, tool_results, compacted=compacted),
    )
