"""Pure: a chat completion's reply as the Responses API reports it (call ids, finish reason,
log probabilities, usage)."""

from __future__ import annotations

from typing import Any

from models.ids import new_id
from models.responses import InputTokensDetails, OutputTokensDetails, Usage


def with_call_ids(message: dict[str, Any]) -> dict[str, Any]:
    for call in message.get("tool_calls") or []:
        call.setdefault("id", new_id("call"))
        if not call["id"]:
            call["id"] = new_id("call")
    return message


def finish_reason(reason: str | None, message: dict[str, Any]) -> str:
    if reason in ("stop", "length", "tool_calls", "content_filter"):
        return reason
    return "tool_calls" if message.get("tool_calls") else "stop"


def logprobs(choice: dict[str, Any]) -> list[dict[str, Any]]:
    """A choice's token log probabilities: chat completions and Responses share their shape."""
    return (choice.get("logprobs") or {}).get("content") or []


def present(message: dict[str, Any]) -> dict[str, Any]:
    """The message without the keys a backend sent as null."""
    return {key: value for key, value in message.items() if value is not None}


def usage(usage: dict[str, Any] | None) -> Usage:
    if not usage:
        return Usage()
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    return Usage(
        input_tokens=usage.get("prompt_tokens") or 0,
        input_tokens_details=InputTokensDetails(cached_tokens=cached),
        output_tokens=usage.get("completion_tokens") or 0,
        output_tokens_details=OutputTokensDetails(reasoning_tokens=reasoning),
        total_tokens=usage.get("total_tokens") or 0,
    )
