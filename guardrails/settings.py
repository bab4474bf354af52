"""What an operator sets for moderation (`serve` and `dev` read it from the environment)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models.errors import StartupError
from models.moderation import ModerationMode, ModerationPlan, SafetyLimit

ANY_PROJECT = "*"


class RequiredPolicy(BaseModel):
    """One project's policy in `MODERATION_REQUIRED`: a request may make it stronger, never weaker."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=256)
    input: ModerationMode | None = None
    output: ModerationMode | None = None


class ModerationSettingError(StartupError):
    """A moderation setting the process cannot start with (the message names it)."""


@dataclass(frozen=True)
class ModerationSettings:
    fail_open: bool = False
    """`MODERATION_FAIL_OPEN`: when the moderation backend cannot answer within the budget,
    the response goes on unchecked (the failure recorded) instead of ending `incomplete`."""
    budget_seconds: float = 60.0
    """`MODERATION_RETRY_SECONDS`: how long one check keeps retrying a backend that fails."""
    window_chars: int = 200
    """`MODERATION_WINDOW_CHARS`: the most characters of streamed output one check holds back."""
    required: Mapping[str, RequiredPolicy] = field(default_factory=dict)
    """`MODERATION_REQUIRED`: project (or `*`, every other) -> the policy its responses run at least."""
    safety: SafetyLimit = field(default_factory=SafetyLimit)
    """`SAFETY_IDENTIFIER_MAX_BLOCKS` (0: off) within `SAFETY_IDENTIFIER_WINDOW_SECONDS`."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ModerationSettings:
        def number(name: str, default: float) -> float:
            value = environ.get(name, "").strip()
            try:
                return float(value) if value else default
            except ValueError:
                raise ModerationSettingError(f"{name} must be a number, not {value[:40]!r}") from None

        try:
            return cls(
                fail_open=environ.get("MODERATION_FAIL_OPEN", "").lower() in ("1", "true", "yes", "on"),
                budget_seconds=_positive("MODERATION_RETRY_SECONDS", number("MODERATION_RETRY_SECONDS", 60.0)),
                window_chars=int(number("MODERATION_WINDOW_CHARS", 200)),
                required=_required(environ.get("MODERATION_REQUIRED", "")),
                safety=SafetyLimit(
                    blocks=int(number("SAFETY_IDENTIFIER_MAX_BLOCKS", 0)),
                    window_seconds=number("SAFETY_IDENTIFIER_WINDOW_SECONDS", 86_400.0),
                ),
            )
        except ValidationError as error:
            raise ModerationSettingError(f"a moderation setting is out of range: {error.errors()[0]['msg']}") from None

    def required_for(self, project: str) -> RequiredPolicy | None:
        return self.required.get(project) or self.required.get(ANY_PROJECT)

    def plan(self, model: str, input_mode: ModerationMode | None, output_mode: ModerationMode | None) -> ModerationPlan:
        return ModerationPlan(
            model=model,
            input=input_mode,
            output=output_mode,
            fail_open=self.fail_open,
            window_chars=self.window_chars,
            budget_seconds=self.budget_seconds,
        )


def _positive(name: str, value: float) -> float:
    if not value > 0:
        raise ModerationSettingError(f"{name} must be above 0")
    return value


def _required(text: str) -> dict[str, RequiredPolicy]:
    if not text.strip():
        return {}
    try:
        document = json.loads(text)
    except ValueError:
        raise ModerationSettingError(
            'MODERATION_REQUIRED must be JSON: {"<project or *>": {"model": ..., "input": "block", ...}}'
        ) from None
    if not isinstance(document, dict):
        raise ModerationSettingError("MODERATION_REQUIRED must be a JSON object of project -> policy")
    policies = {}
    for project, policy in document.items():
        try:
            policies[str(project)] = RequiredPolicy.model_validate(policy)
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise ModerationSettingError(
                f"MODERATION_REQUIRED[{str(project)[:40]!r}]{'.' + where if where else ''}: {problem['msg']}"
            ) from None
    return policies
