"""What the `file_search` tool and the Vector Stores API's search share: file attributes,
the filters over them, and the ranking options."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    model_validator,
)

MAX_RESULTS = 50
MAX_FILTER_DEPTH = 8


AttributeValue = StrictBool | StrictInt | StrictFloat | Annotated[str, Field(max_length=512)]


def _attribute_limits(value: dict[str, Any]) -> dict[str, Any]:
    if len(value) > 16:
        raise ValueError("at most 16 attributes")
    if any(len(key) > 64 for key in value):
        raise ValueError("attribute keys are at most 64 characters")
    return value


Attributes = Annotated[dict[str, AttributeValue], AfterValidator(_attribute_limits)]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ComparisonFilter(Body):
    type: Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"]
    key: str = Field(max_length=64)
    value: AttributeValue | list[StrictInt | StrictFloat | Annotated[str, Field(max_length=512)]]


class CompoundFilter(Body):
    type: Literal["and", "or"]
    filters: list[ComparisonFilter | CompoundFilter] = Field(min_length=1, max_length=32)


Filter = ComparisonFilter | CompoundFilter


def filter_depth(node: Filter) -> int:
    if isinstance(node, ComparisonFilter):
        return 1
    return 1 + max(filter_depth(each) for each in node.filters)


def _shallow(node: Filter | None) -> Filter | None:
    if node is not None and filter_depth(node) > MAX_FILTER_DEPTH:
        raise ValueError(f"filters may nest at most {MAX_FILTER_DEPTH} levels")
    return node


Filters = Annotated[Filter, AfterValidator(_shallow)]


class HybridSearch(Body):
    embedding_weight: float = Field(ge=0)
    text_weight: float = Field(ge=0)

    @model_validator(mode="after")
    def _some_weight(self) -> HybridSearch:
        if self.embedding_weight + self.text_weight <= 0:
            raise ValueError("embedding_weight and text_weight may not both be 0")
        return self


class RankingOptions(Body):
    ranker: Literal["none", "auto", "default-2024-11-15"] | None = None
    score_threshold: float | None = Field(default=None, ge=0, le=1)
    hybrid_search: HybridSearch | None = None
