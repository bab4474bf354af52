"""The objects of `POST /v1/responses/compact` and `POST /v1/responses/input_tokens`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from models.items import CompactionItem
from models.responses import Usage


class CompactedResponse(BaseModel):
    id: str
    object: Literal["response.compaction"] = "response.compaction"
    created_at: int
    output: list[CompactionItem]
    usage: Usage


class InputTokenCount(BaseModel):
    object: Literal["response.input_tokens"] = "response.input_tokens"
    input_tokens: int
