"""Compaction: a long context summarised by the model into one `compaction` item, which
then stands for everything before it.

The item's `encrypted_content` is opaque to clients: the summary, and the messages kept
word for word (the newest user message), sealed for the project (`sealing/`), or only
encoded when the server has no `SECRETS_KEY`. Rendered for a backend, it is a user message
holding the summary (marked, so a context can be cut at it), then the kept messages.
Whatever comes before the latest compaction item (in a chain's context, a conversation's
items, or a request's `input`) is left out: the summary has it.

What the summariser is sent: `PROMPT`, then the context as a transcript, without reasoning,
with long tool outputs cut to their start (they are the first to go), and within the window
the oldest entries go. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Protocol

from pydantic import BaseModel, Field, ValidationError

from context.tokens import message_tokens, text_tokens

Message = dict[str, Any]

MARKER = "durable_responses_compaction"
"""The key that marks a stored summary message (with its item's id); never sent upstream."""
PROMPT = (
    "COMPACT THE CONVERSATION. Write a summary of everything above that lets the conversation go on "
    "without it: the user's goals and requests, decisions made, facts and figures learned (from tools "
    "too), work done and work left, and anything the user asked to remember. Be complete but brief; "
    "write only the summary."
)
"""The summariser's instruction, sent as the system message before the transcript."""
SUMMARY_PREFIX = "Summary of the conversation so far (its earlier messages were compacted into it):\n"
TOOL_OUTPUT_CHARS = 2_000
"""A tool output longer than this reaches the summariser cut to its start."""
KEPT_USER_TOKENS = 4_000
"""The newest user message is kept word for word up to this size; a longer one is summarised."""
PLAIN = "plain."
"""The prefix of content only encoded (a server without `SECRETS_KEY`)."""


class CompactionContent(BaseModel):
    summary: str
    kept: list[dict[str, Any]] = Field(default_factory=list)


class Sealing(Protocol):
    def seal_compaction(self, content: bytes, *, project: str) -> str: ...

    def open_compaction(self, sealed: str, *, project: str) -> bytes | None: ...


def seal(content: CompactionContent, box: Sealing | None, project: str) -> str:
    raw = content.model_dump_json().encode()
    if box is None:
        return PLAIN + base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return box.seal_compaction(raw, project=project)


def open_content(blob: str, box: Sealing | None, project: str) -> CompactionContent | None:
    """The content of a compaction item this server made for `project`, else None."""
    if box is None:
        if not blob.startswith(PLAIN):
            return None
        body = blob.removeprefix(PLAIN)
        try:
            raw: bytes | None = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError):
            return None
    else:
        raw = box.open_compaction(blob, project=project)
    if raw is None:
        return None
    try:
        return CompactionContent.model_validate_json(raw)
    except ValidationError:
        return None


def rendered(item_id: str, content: CompactionContent) -> list[Message]:
    """The messages a compaction item stands for: its summary, then the kept messages."""
    return [{"role": "user", "content": SUMMARY_PREFIX + content.summary, MARKER: item_id}, *content.kept]


def from_latest(messages: list[Message]) -> list[Message]:
    """The messages from the latest compaction summary on (all of them, when none)."""
    for index in range(len(messages) - 1, -1, -1):
        if MARKER in messages[index]:
            return messages[index:]
    return messages


def sendable(message: Message) -> Message:
    """The message as a backend may see it (without the marker)."""
    return {key: value for key, value in message.items() if key != MARKER} if MARKER in message else message


def kept_messages(messages: list[Message]) -> list[Message]:
    """What a compaction keeps word for word: the newest user message, unless it is long."""
    for message in reversed(messages):
        if message.get("role") == "user" and MARKER not in message:
            return [sendable(message)] if message_tokens(message) <= KEPT_USER_TOKENS else []
    return []


def transcript(messages: list[Message], budget: int | None = None) -> str:
    """The context as the summariser reads it: one entry per message, reasoning left out,
    long tool outputs cut to their start; within `budget` tokens, the oldest entries go."""
    entries = []
    for message in messages:
        role = message.get("role")
        text = _text(message.get("content"))
        if role == "tool" and len(text) > TOOL_OUTPUT_CHARS:
            text = text[:TOOL_OUTPUT_CHARS] + f" … [{len(text) - TOOL_OUTPUT_CHARS} more characters]"
        if text:
            entries.append(f"[{'tool result' if role == 'tool' else role}] {text}")
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            entries.append(f"[{role} called {function.get('name')}] {function.get('arguments') or ''}")
    if budget is not None:
        total = 0
        for index in range(len(entries) - 1, -1, -1):
            total += text_tokens(entries[index]) + 1
            if total > budget:
                entries = entries[index + 1 :]
                break
    return "\n\n".join(entries)


def summariser_messages(messages: list[Message], budget: int | None = None) -> list[Message]:
    """The summariser's request: `PROMPT`, then the transcript of the context."""
    return [{"role": "system", "content": PROMPT}, {"role": "user", "content": transcript(messages, budget)}]


def is_summariser_request(messages: list[Any]) -> bool:
    """Whether a chat request is a compaction's (it opens with `PROMPT`): the demo model
    answers those with a summary of its own."""
    first = messages[0] if messages else None
    return isinstance(first, dict) and first.get("role") == "system" and first.get("content") == PROMPT


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            part["text"] if isinstance(part.get("text"), str) else f"[{part.get('type')}]"
            for part in content
            if isinstance(part, dict)
        )
    return ""
