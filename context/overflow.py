"""Telling a backend's "the input is longer than my context window" from its other refusals.

OpenAI says it with the code `context_length_exceeded`; vLLM, SGLang, llama.cpp, LM Studio
and the rest only in words, or with a type of their own (llama.cpp's
`exceed_context_size_error`, which also gives `n_ctx` and `n_prompt_tokens`). The window and
the input's size are read from the words when they say them, so the window can be learned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "context_window_exceeded"})
_SAYS_OVERFLOW = re.compile(
    r"maximum context length|context length exceeded|exceeds? (?:the )?(?:available |model'?s? )?context"
    r"|context (?:window|size|length) (?:is )?exceeded|maximum model length|longer than the maximum"
    r"|too many (?:input )?tokens|prompt is too long|input (?:length|tokens?) .{0,40}exceeds?",
    re.IGNORECASE,
)
_WINDOW = re.compile(
    r"maximum context length (?:is|of) (\d+)|maximum model length (?:is |of )?(\d+)"
    r"|maximum allowed (?:length|input length) \((\d+)|available context size \((\d+)|context window (?:is|of) (\d+)",
    re.IGNORECASE,
)
_TOKENS = re.compile(
    r"resulted in (\d+) tokens|(\d+) in the messages|has (\d+) input tokens|prompt \(length (\d+)\)"
    r"|input length \((\d+)|request \((\d+) tokens\)|prompt is too long: (\d+)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Overflow:
    window: int | None
    tokens: int | None


def overflow_in(status: int, body: Any, said: str) -> Overflow | None:
    """The overflow a refusal (`status`, its parsed JSON `body`, its message) tells of, or None."""
    if status not in (400, 413, 422):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else body if isinstance(body, dict) else {}
    coded = error.get("code") in CODES or error.get("type") in CODES
    if not coded and not _SAYS_OVERFLOW.search(said):
        return None
    window = _whole(error.get("n_ctx")) or _first(_WINDOW, said)
    tokens = _whole(error.get("n_prompt_tokens")) or _first(_TOKENS, said)
    return Overflow(window, tokens)


def _first(pattern: re.Pattern[str], text: str) -> int | None:
    match = pattern.search(text)
    if match is None:
        return None
    return next((int(group) for group in match.groups() if group), None)


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
