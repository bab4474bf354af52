"""What a turn does with its context, given the model's window and the response's settings:
send it as it is, send it with the oldest items left out (`truncation: "auto"`), compact it
first (`context_management`), or fail `context_length_exceeded`. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from context.fitting import fit
from context.tokens import messages_tokens, request_tokens
from models.errors import ContextWindowExceededError

DEFAULT_THRESHOLD_SHARE = 0.9
"""Without `compact_threshold`, a context is compacted past this share of the window."""


@dataclass(frozen=True)
class Send:
    messages: list[dict[str, Any]]
    tokens: int
    """The request's estimated tokens (0: not measured, as no window or threshold is known)."""
    dropped: int = 0
    """Messages truncation left out."""


@dataclass(frozen=True)
class Compact:
    tokens: int
    threshold: int


def compaction_threshold(explicit: int | None, window: int | None) -> int | None:
    """The size past which a context with compaction on is compacted: the client's
    threshold, but never past the window; without one, 90% of the window (None: unknown)."""
    if explicit is not None:
        return min(explicit, window) if window else explicit
    return int(window * DEFAULT_THRESHOLD_SHARE) if window else None


def plan(
    body: dict[str, Any],
    window: int | None,
    *,
    truncation: str,
    compaction: bool,
    threshold: int | None,
    may_compact: bool,
) -> Send | Compact:
    """`body`: the chat-completions request as it would be sent whole."""
    messages = body["messages"]
    if window is None and (not compaction or threshold is None):
        return Send(messages, 0)  # nothing to measure against: not measured
    tokens = request_tokens(body)
    if compaction and may_compact and threshold is not None and tokens > threshold:
        return Compact(tokens, threshold)
    if window is None or tokens <= window:
        return Send(messages, tokens)
    if truncation == "auto":
        fixed = tokens - messages_tokens(messages)
        fitted = fit(messages, window - fixed)
        if fitted is not None:
            return Send(fitted.messages, fitted.tokens + fixed, fitted.dropped)
    raise overflow(tokens, window, truncated=truncation == "auto")


def overflow(tokens: int, window: int, *, truncated: bool = False) -> ContextWindowExceededError:
    why = (
        (
            " even with the oldest items left out (the instructions, the newest user message and the latest step "
            "are always kept)"
        )
        if truncated
        else ""
    )
    return ContextWindowExceededError(
        f"Your input exceeds the context window of this model{why}: about {tokens} tokens, and the model takes at "
        f'most {window}. Set `truncation` to "auto" or use `context_management` to compact the context.',
        window=window,
        tokens=tokens,
        status_code=None,
    )
