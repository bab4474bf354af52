"""Tool definitions and `tool_choice`, discriminated on `type`."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field

from models.items import WireModel

SUPPORTED_TOOL_TYPES = ("function",)


class FunctionTool(WireModel):
    type: Literal["function"]
    name: str = Field(min_length=1, max_length=128, pattern=r"^[a-zA-Z0-9_-]+$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


Tool = Annotated[Union[FunctionTool], Field(discriminator="type")]


class ToolChoiceFunction(WireModel):
    type: Literal["function"]
    name: str


ToolChoiceMode = Literal["none", "auto", "required"]
ToolChoice = Union[ToolChoiceMode, ToolChoiceFunction]
