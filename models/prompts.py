"""Prompts kept on the server (the Prompts API, in OGX's shape) and a response's reference to
one (`prompt: {id, version?, variables}`, as OpenAI defines it).

A prompt is text with `{{variable}}` placeholders, in integer versions; one version is the
default. Rendering is a single pass over the text (linear, whatever the variables hold), and
a value is never read for placeholders again. What it would make is measured first, from the
placeholders and the values' lengths (`rendered_bytes`), and refused past its budget before
anything is built: 20,000 `{{a}}` with an 8 KB value would otherwise be 160 MB.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationInfo, field_validator

from models.items import InputFile, InputImage, InputText

PROMPT_ID_PREFIX = "pmpt"
MAX_PROMPT_CHARACTERS = 100_000
"""A prompt's text (it becomes a response's instructions, which travel in its workflow's input)."""
MAX_VARIABLES = 64
VARIABLE_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}")


def placeholders(template: str) -> list[str]:
    """The variables a template names, each once, in the order they first appear."""
    return list(dict.fromkeys(match.group(1) for match in PLACEHOLDER.finditer(template)))


def rendered_bytes(template: str, values: Mapping[str, str]) -> dict[str, int]:
    """The UTF-8 size of `render(template, values)`, without rendering it, by where it comes
    from: `""` the template's own text (placeholders left out), and each variable's value times
    its placeholders (each value measured once)."""
    sizes = {name: len(value.encode()) for name, value in values.items()}
    made = {"": len(template.encode())}
    for match in PLACEHOLDER.finditer(template):
        name = match.group(1)
        made[""] -= len(match.group(0).encode())
        made[name] = made.get(name, 0) + sizes.get(name, 0)
    return made


def render(template: str, values: Mapping[str, str]) -> str:
    """The template with each placeholder replaced by its value (one pass); measure it first
    (`rendered_bytes`) when the values are a tenant's."""
    return PLACEHOLDER.sub(lambda match: values.get(match.group(1), ""), template)


class PromptText(BaseModel):
    """What a version holds: its text and the variables it declares."""

    model_config = ConfigDict(extra="forbid")
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARACTERS)
    variables: list[Annotated[str, Field(pattern=VARIABLE_NAME)]] = Field(
        default_factory=list, max_length=MAX_VARIABLES
    )

    @field_validator("variables")
    @classmethod
    def _declared_once_and_all(cls, variables: list[str], info: ValidationInfo) -> list[str]:
        if len(set(variables)) != len(variables):
            raise ValueError("each variable may be declared once")
        undeclared = [name for name in placeholders(info.data.get("prompt") or "") if name not in variables]
        if undeclared:
            raise ValueError(f"the prompt uses {{{{{undeclared[0]}}}}}, which is not declared here")
        return variables


class CreatePrompt(PromptText):
    pass


class UpdatePrompt(PromptText):
    version: StrictInt = Field(ge=1)
    """The version this update follows: the prompt's latest (else the update is refused)."""
    set_as_default: StrictBool = True


class SetDefaultVersion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: StrictInt = Field(ge=1)


class PromptVersion(BaseModel):
    """A prompt's version as the API shows it."""

    prompt_id: str
    version: int
    prompt: str
    variables: list[str]
    is_default: bool


PromptValue = str | Annotated[InputText | InputImage | InputFile, Field(discriminator="type")]


class PromptReference(BaseModel):
    """`prompt` of a create request: the prompt, a version (a string of digits; the default
    version without), and a value for each of its variables."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=80)
    version: str | None = Field(default=None, pattern=r"^[0-9]{1,9}$")
    variables: dict[str, PromptValue] | None = Field(default=None, max_length=MAX_VARIABLES)

    def wire(self, version: int) -> dict[str, Any]:
        """As a response echoes it: with the version it used."""
        variables = None
        if self.variables is not None:
            variables = {
                name: value if isinstance(value, str) else value.model_dump(mode="json", exclude_none=True)
                for name, value in self.variables.items()
            }
        return {"id": self.id, "version": str(version), "variables": variables}
