"""The wire types of `/v1/models`, as OpenAI's (`openai.types.Model`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class ModelObject(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelObject]
