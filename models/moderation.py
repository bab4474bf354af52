"""Moderation as the API says it: the request's `moderation` (a model and a policy per side),
the plan a response runs with, and the results `/v1/moderations` and `response.moderation`
give (`guardrails/` makes them).

How checks become one result (a response has one `input` and one `output`): every check of a
side (each turn's new input; each window of streamed output, or each turn's whole output)
merges into it: `flagged` if any check was, a category true if any check found it, each score
the highest any check gave, the input types each category was scored on together.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

ModerationMode = Literal["score", "block"]
InputType = Literal["text", "image"]

TEXT_ONLY: tuple[str, ...] = (
    "harassment",
    "harassment/threatening",
    "hate",
    "hate/threatening",
    "illicit",
    "illicit/violent",
    "sexual/minors",
)
TEXT_AND_IMAGE: tuple[str, ...] = (
    "self-harm",
    "self-harm/intent",
    "self-harm/instructions",
    "sexual",
    "violence",
    "violence/graphic",
)
CATEGORIES: tuple[str, ...] = (*TEXT_ONLY, *TEXT_AND_IMAGE)
"""OpenAI's moderation categories, as `omni-moderation-latest` names them."""


def applicable_types(category: str, types: Iterable[InputType]) -> list[InputType]:
    """The input types a category is scored on, of those classified (images only where
    OpenAI's categories take them)."""
    allowed: tuple[InputType, ...] = ("text", "image") if category in TEXT_AND_IMAGE else ("text",)
    present = set(types)
    return [kind for kind in allowed if kind in present]


class ModerationResult(BaseModel):
    """One classification: of one `/v1/moderations` input, or merged over a response's checks."""

    type: Literal["moderation_result"] = "moderation_result"
    model: str
    flagged: bool
    categories: dict[str, bool]
    category_scores: dict[str, float]
    category_applied_input_types: dict[str, list[InputType]]

    @classmethod
    def clean(cls, model: str, types: Iterable[InputType] = ("text",)) -> ModerationResult:
        """Nothing found (and nothing to look at counts as nothing found)."""
        kinds = list(types)
        return cls(
            model=model,
            flagged=False,
            categories=dict.fromkeys(CATEGORIES, False),
            category_scores=dict.fromkeys(CATEGORIES, 0.0),
            category_applied_input_types={name: applicable_types(name, kinds) for name in CATEGORIES},
        )

    def merged(self, other: ModerationResult) -> ModerationResult:
        """Both checks as one (every result names all of `CATEGORIES`: the classifiers fill
        those a backend left out)."""
        return ModerationResult(
            model=self.model,
            flagged=self.flagged or other.flagged,
            categories={name: self.categories[name] or other.categories[name] for name in CATEGORIES},
            category_scores={name: max(self.category_scores[name], other.category_scores[name]) for name in CATEGORIES},
            category_applied_input_types={
                name: [
                    kind
                    for kind in ("text", "image")
                    if kind in self.category_applied_input_types[name]
                    or kind in other.category_applied_input_types[name]
                ]
                for name in CATEGORIES
            },
        )

    def to_wire(self) -> dict[str, object]:
        """As `/v1/moderations` gives one result (no `type`, no `model`: the list has it)."""
        return self.model_dump(mode="json", exclude={"type", "model"})


class ModerationFailure(BaseModel):
    """A side that has no result: not asked for, not reached, or its backend failed."""

    type: Literal["error"] = "error"
    code: str
    message: str


SideResult = Annotated[ModerationResult | ModerationFailure, Field(discriminator="type")]

NOT_REQUESTED = "moderation_not_requested"
"""The policy sets no mode for this side: it was not checked."""
NOT_PRODUCED = "output_not_produced"
"""The input was blocked: the model was not asked, so there is no output to check."""
UNAVAILABLE = "moderation_unavailable"
"""The moderation backend did not answer within its budget (`fail closed`, or open)."""


def not_requested(side: str) -> ModerationFailure:
    return ModerationFailure(code=NOT_REQUESTED, message=f"the moderation policy sets no mode for the {side}")


class ResponseModeration(BaseModel):
    """`response.moderation`: both sides, each a result or an error (the SDK requires both)."""

    input: SideResult
    output: SideResult


def merged_side(current: ModerationResult | ModerationFailure | None, new: SideResult) -> SideResult:
    """A side after one more check: results merge; a failure (its backend could not answer)
    stays once it happened, as the side was not fully checked."""
    if current is None or isinstance(new, ModerationFailure):
        return new
    if isinstance(current, ModerationFailure):
        return current if current.code == UNAVAILABLE else new
    return current.merged(new)


# ---- the request's `moderation`, and the plan a response runs with ----------------------------


class ModerationModeSetting(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: ModerationMode


class ModerationPolicySetting(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: ModerationModeSetting | None = None
    output: ModerationModeSetting | None = None


class ModerationSetting(BaseModel):
    """The request's `moderation`: `{model, policy: {input: {mode}, output: {mode}}}`. Without
    a policy both sides are scored."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=256)
    policy: ModerationPolicySetting | None = None


MODE_STRENGTH: dict[ModerationMode | None, int] = {None: 0, "score": 1, "block": 2}


def stronger(a: ModerationMode | None, b: ModerationMode | None) -> ModerationMode | None:
    return a if MODE_STRENGTH[a] >= MODE_STRENGTH[b] else b


class ModerationPlan(BaseModel):
    """What a response's checks are: the model, each side's mode (None: not checked), what
    happens when the moderation backend cannot answer, and the size of streamed windows."""

    model: str
    input: ModerationMode | None = None
    output: ModerationMode | None = None
    fail_open: bool = False
    window_chars: int = Field(default=200, ge=16, le=100_000)
    budget_seconds: float = Field(default=60.0, gt=0)
    """How long one check may keep being retried before the backend counts as down."""

    @classmethod
    def of(cls, setting: ModerationSetting) -> ModerationPlan:
        policy = setting.policy
        if policy is None:
            return cls(model=setting.model, input="score", output="score")
        return cls(
            model=setting.model,
            input=policy.input.mode if policy.input else None,
            output=policy.output.mode if policy.output else None,
        )

    @property
    def holds_output(self) -> bool:
        """Whether streamed text waits for its window's check before anyone sees it."""
        return self.output == "block"


class ModerationProgress(BaseModel):
    """A response's checks so far, carried with it (also across continue-as-new)."""

    input: SideResult | None = None
    output: SideResult | None = None
    input_blocked: bool = False

    def concluded(self, plan: ModerationPlan) -> ResponseModeration:
        """`response.moderation` as the response ends: a side with checks has their merged
        result; one its plan does not check says so; the output of a blocked input was never
        made; a checked side that had nothing to look at is clean."""
        output = self.output
        if output is None and self.input_blocked:
            output = ModerationFailure(code=NOT_PRODUCED, message="the input was blocked: the model was not asked")
        return ResponseModeration(
            input=self.input or _unchecked(plan, plan.input, "input"),
            output=output or _unchecked(plan, plan.output, "output"),
        )


def _unchecked(plan: ModerationPlan, mode: ModerationMode | None, side: str) -> SideResult:
    """A side no check looked at: clean when the plan checks it, else not asked for."""
    return ModerationResult.clean(plan.model) if mode else not_requested(side)


def blocks(mode: ModerationMode | None, result: SideResult, *, fail_open: bool) -> bool:
    """Whether a check's result stops the response: flagged under `block`, or its backend
    down under any mode unless the operator fails open."""
    if isinstance(result, ModerationFailure):
        return result.code == UNAVAILABLE and not fail_open and mode is not None
    return mode == "block" and result.flagged


class SafetyLimit(BaseModel):
    """How many blocked responses within a window block a `safety_identifier`
    (`SAFETY_IDENTIFIER_MAX_BLOCKS`, `SAFETY_IDENTIFIER_WINDOW_SECONDS`); 0: never."""

    blocks: int = Field(default=0, ge=0)
    window_seconds: float = Field(default=86_400.0, gt=0)


# ---- `POST /v1/moderations` ------------------------------------------------------------------

MAX_INPUTS = 32
"""Strings one request may classify (each a result)."""
MAX_IMAGE_URL_CHARS = 8 * 1024 * 1024
"""The longest image URL (a data URL holds the image: ~6 MB of image at most)."""


class ImageUrl(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=MAX_IMAGE_URL_CHARS)


class TextPart(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["text"]
    text: str


class ImagePart(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["image_url"]
    image_url: ImageUrl


ModerationPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class CreateModeration(BaseModel):
    """The body of `POST /v1/moderations`, as OpenAI's: a string, strings (a result each), or
    text and image parts (one result)."""

    model_config = ConfigDict(extra="forbid")

    input: (
        str
        | Annotated[list[str], Field(min_length=1, max_length=MAX_INPUTS)]
        | Annotated[list[ModerationPart], Field(min_length=1, max_length=MAX_INPUTS)]
    )
    model: str = Field(default="omni-moderation-latest", min_length=1, max_length=256)
