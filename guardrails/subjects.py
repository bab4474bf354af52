"""What a check looks at, taken from a response's items, and a whole reply withheld.

Input: each message's text and images, each tool output's text (function, custom, MCP, shell
and the rest, as the items are listed); instructions are the developer's, not checked. Output:
the text of every message (and refusal), reasoning, and call's arguments, as one subject.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from guardrails.moderator import Subject

OUTPUT_FIELDS = ("output", "content", "result", "results")
"""Where a listed tool output holds what the tool gave back."""


def input_subjects(items: Iterable[Mapping[str, Any]]) -> list[Subject]:
    """One subject per input item that holds text or images (listed items, as stored)."""
    subjects = []
    for item in items:
        texts: list[str] = []
        images: list[str] = []
        if item.get("type") == "message":
            _parts(item.get("content"), texts, images)
        elif str(item.get("type", "")).endswith("_output"):
            for name in OUTPUT_FIELDS:
                _parts(item.get(name), texts, images)
        subject = Subject("\n".join(texts), tuple(images))
        if not subject.empty:
            subjects.append(subject)
    return subjects


def _parts(value: Any, texts: list[str], images: list[str]) -> None:
    if isinstance(value, str):
        texts.append(value)
    elif isinstance(value, list):
        for part in value:
            _parts(part, texts, images)
    elif isinstance(value, dict):
        if isinstance(value.get("text"), str):
            texts.append(value["text"])
        if isinstance(value.get("output"), str):
            texts.append(value["output"])
        url = value.get("image_url")
        if value.get("type") == "input_image" and isinstance(url, str) and url:
            images.append(url)


def tool_subjects(texts: Mapping[str, str]) -> list[Subject]:
    """What tools the server ran gave back, as the model will be shown it."""
    return [Subject(text) for text in texts.values() if text.strip()]


def readable(text: str) -> str:
    """Text as a client may be shown it: a JSON value (a call's arguments) and the strings it
    decodes to, which the JSON holds escaped (`\u2014kill\u2014` reads as a word only decoded)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    strings: list[str] = []
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, str):
            strings.append(current)
        elif isinstance(current, dict):
            pending.extend(current.keys())
            pending.extend(current.values())
        elif isinstance(current, list):
            pending.extend(current)
    return "\n".join([text, *reversed(strings)]) if strings else text


def output_subject(output: Iterable[Any]) -> Subject:
    """All a reply says, as one subject."""
    texts: list[str] = []
    for item in output:
        match item.type:
            case "message":
                texts.extend(str(getattr(part, "text", None) or getattr(part, "refusal", "")) for part in item.content)
            case "reasoning":
                texts.extend(part.text for part in item.content or [])
            case _:
                for name in ("arguments", "input"):
                    value = getattr(item, name, None)
                    if isinstance(value, str):
                        texts.append(readable(value))
    return Subject("\n".join(text for text in texts if text))


def withheld(output: Iterable[Any]) -> list[Any]:
    """A whole reply a check blocked: its messages and reasoning without their text (nor the
    log probabilities and annotations that would tell it), `incomplete`; its calls left out."""
    kept = []
    for item in output:
        if item.type == "message":
            parts = [
                part.model_copy(update={"text": "", "logprobs": [], "annotations": []})
                for part in item.content
                if part.type == "output_text"
            ]
            kept.append(item.model_copy(update={"content": parts[:1], "status": "incomplete"}))
        elif item.type == "reasoning":
            kept.append(item.model_copy(update={"content": [], "status": "incomplete", "summary": []}))
    return kept
