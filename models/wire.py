"""What every item of the Responses API is made of: a model that keeps the fields newer SDKs
add, how an input item is listed as it was sent, and what a hosted tool's call has of a call."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ItemStatus = Literal["in_progress", "completed", "incomplete"]
ItemId = Annotated[str, Field(min_length=1, max_length=255)]
"""An item's or a call's id, as a client may give it."""


class WireModel(BaseModel):
    """Tolerant of fields newer SDKs add: they are kept and round-tripped."""

    model_config = ConfigDict(extra="allow")


class ListedAsSent(WireModel):
    """An input item listed as the client sent it, under its id (given, or made for it)."""

    def as_listed(self, item_id: str) -> dict[str, Any]:
        return self.model_dump(exclude_none=True) | {"id": item_id}


class SearchCall:
    """What a hosted tool's call (a web or file search, code) has of a call (its `id` and
    `status` are the item's fields): its id is the chat tool-call id of the model's call."""

    @property
    def chat_call_id(self) -> str:
        return str(self.id)  # type: ignore[attr-defined]

    @property
    def has_run(self) -> bool:
        return self.status in ("completed", "failed", "incomplete")  # type: ignore[attr-defined]
