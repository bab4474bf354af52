"""What the `file_search` tool and the Vector Stores API's search share: file attributes,
the filters over them, and the ranking options."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    Tag,
    model_validator,
)

MAX_RESULTS = 50
MAX_FILTER_DEPTH = 8
MAX_FILTER_VALUES = 1_000
"""Values one `in` or `nin` comparison may list (each file's attribute is looked up in them)."""
MAX_FILTER_COMPARISONS = 256
"""Comparisons one filter may hold in all (each is tried on every file of the stores searched)."""


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

    @model_validator(mode="before")
    @classmethod
    def _few_values(cls, data: Any) -> Any:
        """Counted before any value is checked (or shown in an error): a list of millions is
        refused at once."""
        value = data.get("value") if isinstance(data, dict) else None
        if isinstance(value, list) and len(value) > MAX_FILTER_VALUES:
            raise ValueError(f"a comparison may list at most {MAX_FILTER_VALUES} values")
        return data


def _kind(value: Any) -> str:
    """Which filter a value is, by its `type`, so a bad one is told what is wrong with it as
    that kind (not as whichever kind made the longer error)."""
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return "CompoundFilter" if kind in ("and", "or") else "ComparisonFilter"


class CompoundFilter(Body):
    type: Literal["and", "or"]
    filters: list[AnyFilter] = Field(min_length=1, max_length=32)


AnyFilter = Annotated[
    Annotated[ComparisonFilter, Tag("ComparisonFilter")] | Annotated[CompoundFilter, Tag("CompoundFilter")],
    Discriminator(_kind),
]
CompoundFilter.model_rebuild()
Filter = ComparisonFilter | CompoundFilter


def filter_depth(node: Filter) -> int:
    if isinstance(node, ComparisonFilter):
        return 1
    return 1 + max(filter_depth(each) for each in node.filters)


def comparisons(node: Filter) -> int:
    if isinstance(node, ComparisonFilter):
        return 1
    return sum(comparisons(each) for each in node.filters)


def _shallow(node: Filter | None) -> Filter | None:
    if node is not None and filter_depth(node) > MAX_FILTER_DEPTH:
        raise ValueError(f"filters may nest at most {MAX_FILTER_DEPTH} levels")
    if node is not None and comparisons(node) > MAX_FILTER_COMPARISONS:
        raise ValueError(f"a filter may hold at most {MAX_FILTER_COMPARISONS} comparisons")
    return node


Filters = Annotated[AnyFilter, AfterValidator(_shallow)]


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
