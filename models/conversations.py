"""The bodies of OpenAI's Conversations API routes (`/v1/conversations`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from models.items import InputItem
from models.requests import Includable, Metadata

MAX_ITEMS_AT_ONCE = 20
"""Items a client may add in one request, as with OpenAI."""


class CreateConversation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[InputItem] | None = Field(default=None, max_length=MAX_ITEMS_AT_ONCE)
    metadata: Metadata | None = None


class UpdateConversation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metadata: Metadata | None


class AddConversationItems(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[InputItem] = Field(min_length=1, max_length=MAX_ITEMS_AT_ONCE)


class ItemsQuery(BaseModel):
    """What the item routes take in their query string besides paging."""

    include: list[Includable] = Field(default_factory=list)
