"""The bodies of OpenAI's webhook endpoint routes (`/v1/webhook_endpoints`): a project's own
endpoints, each taking the response events it names (`models/webhooks.py`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from models.webhooks import WebhookEventType as EventType
from models.webhooks import is_http_url

MAX_URL_CHARACTERS = 2048


def _checked_url(url: str) -> str:
    if not is_http_url(url) or not url.isprintable() or " " in url:
        raise ValueError("expected an http:// or https:// URL")
    return url


def _unique(event_types: list[str]) -> list[str]:
    if len(set(event_types)) != len(event_types):
        raise ValueError("each event type may be named once")
    return event_types


class CreateWebhookEndpoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=256)
    url: str = Field(min_length=1, max_length=MAX_URL_CHARACTERS)
    event_types: list[EventType] = Field(min_length=1, max_length=5)

    _url = field_validator("url")(_checked_url)
    _event_types = field_validator("event_types")(_unique)


class UpdateWebhookEndpoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(default=None, min_length=1, max_length=256)
    url: str | None = Field(default=None, min_length=1, max_length=MAX_URL_CHARACTERS)
    event_types: list[EventType] | None = Field(default=None, min_length=1, max_length=5)

    _url = field_validator("url")(lambda url: url if url is None else _checked_url(url))
    _event_types = field_validator("event_types")(lambda types: types if types is None else _unique(types))


class RotateWebhookSecret(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keep_old_secret_active_for_24_hours: StrictBool = False


class WebhookTestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    event_type: EventType
