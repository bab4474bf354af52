"""Items this server sealed for a client, as a model call reads and writes them.

Reasoning is sealed into `encrypted_content` for a client that asked to carry it
(`include: ["reasoning.encrypted_content"]`) and opened again when passed back (a `compaction`
item's summary is sealed and opened by `context/compaction.py`). Each opens only with this server's
secrets key and for the project it was sealed for; anything else is left as it came.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from models.activity_io import InferenceInput
from models.items import ReasoningText
from sealing.secret_box import SecretBox


def sealer(box: SecretBox | None, request: InferenceInput) -> Callable[[str], str] | None:
    """Seals reasoning for a client that asked to carry it (`reasoning.encrypted_content`)."""
    if box is None or "reasoning.encrypted_content" not in request.response.include:
        return None
    project = request.project
    return lambda text: box.seal_reasoning(text, project=project)


def with_sealed_reasoning(box: SecretBox | None, request: InferenceInput, output: list[Any]) -> list[Any]:
    seal = sealer(box, request)
    if seal is None:
        return output
    return [
        item.model_copy(update={"encrypted_content": seal(item.text())}) if item.type == "reasoning" else item
        for item in output
    ]


def opened(box: SecretBox | None, item: Any, project: str) -> Any:
    """A reasoning item passed back sealed, with its text again (when this server sealed it
    for this project)."""
    if item.type != "reasoning" or item.content or not item.encrypted_content or box is None:
        return item
    text = box.open_reasoning(item.encrypted_content, project=project)
    return item if text is None else item.model_copy(update={"content": [ReasoningText(text=text)]})
