"""A token count that needs no tokenizer: an estimate that errs on the high side.

No vocabulary is shipped or downloaded (backends run any model, and each has its own). The
text is cut the way BPE tokenizers pre-split it (runs of letters, of digits, single marks,
runs of blanks), and each piece is charged at least what any common tokenizer charges it:

- a run of ASCII letters: one token per 4 letters, at least one (English words are one
  token each in the GPT, Llama and Qwen vocabularies: this overcounts long words only);
- letters beyond ASCII: one token per 3 bytes of UTF-8 (a CJK character is one);
- digits: one each (Llama and Qwen split numbers into single digits);
- any other mark: one each;
- blanks: a single space rides with the next word; longer runs, one per 4.

Each chat message adds `PER_MESSAGE` (its role and separators), each tool its JSON schema.
The estimate is what decides whether a request fits; the backend's own `usage` is what a
response reports.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

import orjson

PER_MESSAGE = 4
"""Tokens a chat template spends on a message besides its content (role, separators)."""
PER_REQUEST = 3
"""Tokens the template spends once (the assistant's turn being primed)."""
PER_IMAGE = 1_000
"""An image, whatever its size: about what a 1024×1024 tile set costs on common models."""

_PIECES = re.compile(r"[A-Za-z]+|[^\W\d_]+|\d|\s+|.", re.DOTALL)


def text_tokens(text: str) -> int:
    """Tokens `text` takes, estimated high."""
    count = 0
    for match in _PIECES.finditer(text):
        piece = match.group()
        first = piece[0]
        if first.isascii() and first.isalpha():
            count += math.ceil(len(piece) / 4)
        elif first.isalpha():
            count += math.ceil(len(piece.encode()) / 3)
        elif first.isspace():
            count += 0 if piece == " " else math.ceil(len(piece) / 4)
        else:
            count += 1
    return count


def message_tokens(message: dict[str, Any]) -> int:
    """One chat-completions message: its text, its parts, its tool calls."""
    count = PER_MESSAGE
    content = message.get("content")
    if isinstance(content, str):
        count += text_tokens(content)
    elif isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "image_url":
                count += PER_IMAGE
            elif isinstance(part.get("text"), str):
                count += text_tokens(part["text"])
            else:
                count += _json_tokens(part)
    for key in ("reasoning_content", "reasoning"):
        if isinstance(message.get(key), str):
            count += text_tokens(message[key])
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        count += (
            PER_MESSAGE
            + text_tokens(str(function.get("name") or ""))
            + text_tokens(str(function.get("arguments") or ""))
        )
    return count


def messages_tokens(messages: Iterable[dict[str, Any]]) -> int:
    return sum(message_tokens(message) for message in messages)


def request_tokens(body: dict[str, Any]) -> int:
    """A whole chat-completions request: its messages, tools and response format."""
    count = PER_REQUEST + messages_tokens(body.get("messages") or [])
    if body.get("tools"):
        count += _json_tokens(body["tools"])
    if body.get("response_format"):
        count += _json_tokens(body["response_format"])
    return count


def _json_tokens(value: Any) -> int:
    return text_tokens(orjson.dumps(value).decode())
