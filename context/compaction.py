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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, Field, ValidationError

from context.tokens import PER_MESSAGE, PER_REQUEST, message_tokens, text_tokens
from models.items import CompactionItem

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


SUMMARY_TOKENS = 1_024
"""The most a compaction's summary may take."""
MIN_SUMMARY_TOKENS = 32
"""The least a summary is given when it stands for everything (nothing is kept beside it)."""
LEFT_OUT = "Earlier messages were left out: they did not fit beside the newest one."
"""What stands for the earlier messages when the newest, kept word for word, leaves no room for
a summary of them: the model is told, and no summary is asked for."""
COMPACT_ONLY_SHARE = 0.5
"""`/v1/responses/compact` (no threshold of its own): its item takes at most this share of the
window, so the item and a message of reasonable size fit after it; a newest message larger
than that is summarised with the rest."""


@dataclass(frozen=True)
class Room:
    """What one compaction may take: the summary's tokens (0: no summary, `LEFT_OUT` stands
    for the earlier messages), whether the newest user message is kept word for word, and the
    transcript the summariser reads (None: not measured)."""

    summary_tokens: int
    keep: bool
    transcript_tokens: int | None


def room_for(
    target: int | None, window: int | None, fixed_tokens: int, kept: list[dict[str, Any]], *, share: bool = False
) -> Room | None:
    """What a compaction may take so that what follows it fits: the summary's message (its
    header and its text) and the kept message, after the request's fixed part (instructions,
    tools), within `target` (the compaction threshold, else, with `share`, the window's
    `COMPACT_ONLY_SHARE`). A kept message too large for a compaction threshold stays when it
    fits the window by itself, and the summary shrinks to what the window leaves beside it (to
    nothing, `LEFT_OUT` in its place, when that is too little to say anything): a turn is never
    refused while its newest message fits. Under `share` it is summarised with the rest instead
    (the item must leave room for what follows). None: the newest message alone cannot fit."""
    kept_tokens = sum(message_tokens(message) for message in kept)
    if target is None:
        return Room(SUMMARY_TOKENS, True, None if window is None else _transcript_room(window, SUMMARY_TOKENS))
    frame = fixed_tokens + PER_REQUEST + PER_MESSAGE  # the request, and the summary's own message
    header = text_tokens(SUMMARY_PREFIX)
    keep = bool(kept) and kept_tokens + header + MIN_SUMMARY_TOKENS <= target - frame
    summary = target - frame - header - (kept_tokens if keep else 0)
    if kept and not keep and window is not None and not share:
        if frame + text_tokens(LEFT_OUT) + kept_tokens > window:
            return None
        keep, summary = True, window - frame - header - kept_tokens  # over the threshold, within the window
        if summary < MIN_SUMMARY_TOKENS // 4:
            summary = 0  # too little to say anything: the earlier messages are left out, and the model told
    elif not keep:
        summary = max(MIN_SUMMARY_TOKENS, summary)  # the summary stands for everything
    summary = min(SUMMARY_TOKENS, summary)
    return Room(summary, keep, None if window is None or not summary else _transcript_room(window, summary))


def _transcript_room(window: int, summary_tokens: int) -> int:
    """The transcript's share of the summariser's request: the window less its answer and
    the instruction around it."""
    return max(1, window - summary_tokens - text_tokens(PROMPT) - 2 * PER_MESSAGE - PER_REQUEST - 16)


def shortened(summary: str, tokens: int) -> str:
    """The summary within `tokens` (a model may write past what it was asked): its start, cut
    at a word."""
    if text_tokens(summary) <= tokens:
        return summary
    words = summary.split()
    low, high = 0, len(words)
    while low < high:  # the most words that fit, found in log steps
        middle = (low + high + 1) // 2
        if text_tokens(" ".join(words[:middle])) + 1 <= tokens:
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low]) + " …"


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
    """The messages a compaction item stands for: its summary (or, with none, `LEFT_OUT`), then
    the kept messages."""
    said = SUMMARY_PREFIX + content.summary if content.summary else LEFT_OUT
    return [{"role": "user", "content": said, MARKER: item_id}, *content.kept]


def renderer(box: Sealing | None, project: str) -> Callable[[CompactionItem], list[Message]]:
    """Renders a compaction item this server made for `project` as its messages; any other
    is left out (refused at request time: `response_service/context_size.py`)."""

    def render(item: CompactionItem) -> list[Message]:
        content = open_content(item.encrypted_content, box, project)
        return rendered(item.id or "compaction", content) if content is not None else []

    return render


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
        entries = _within(entries, budget)
    return "\n\n".join(entries)


MIN_ENTRY_TOKENS = 10
"""The least of an entry worth reading: past as many entries as the budget gives this, the
oldest go. Room for its tag (`[assistant]`, 5 tokens), its first word (up to 3), the `…` of a
cut and the separator: at 8, a share could hold the tag and nothing of the newest entry."""


def _within(entries: list[str], budget: int) -> list[str]:
    """The entries within `budget` tokens: all of them whole when they fit; else each is read
    from its start up to one share (a short one whole, so every share can be larger), the
    same for all, and past `MIN_ENTRY_TOKENS` a share the oldest go first. The earlier summary,
    the oldest entry, is read as the newest are."""
    sizes = [text_tokens(entry) + 1 for entry in entries]
    if sum(sizes) <= budget:
        return entries
    most = max(0, budget // MIN_ENTRY_TOKENS)
    if len(entries) > most:
        entries, sizes = entries[len(entries) - most :], sizes[len(sizes) - most :]
    low, high = 0, max(sizes, default=0)
    while low < high:  # the largest share that fits, found in log steps
        middle = (low + high + 1) // 2
        if sum(min(size, middle) for size in sizes) <= budget:
            low = middle
        else:
            high = middle - 1
    return [entry if size <= low else shortened(entry, low - 1) for entry, size in zip(entries, sizes, strict=True)]


def summariser_messages(
    messages: list[Message], budget: int | None = None, kept: list[Message] | None = None
) -> list[Message]:
    """The summariser's request: `PROMPT`, then the transcript of the context (less the
    messages kept word for word: they follow the summary as they are)."""
    told = [message for message in messages if not kept or sendable(message) not in kept]
    return [{"role": "system", "content": PROMPT}, {"role": "user", "content": transcript(told, budget)}]


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
