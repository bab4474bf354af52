"""Webhook events as OpenAI sends them, and what a delivery carries through Temporal.

The four ends of a background response are OpenAI's thin events (`id`, `object`,
`created_at`, `type`, `data.id`), so receivers written for OpenAI parse them unchanged. A
response that starts waiting for an MCP approval sends `response.action_required`, modeled
on OpenAI's `agent.session.action_required`, with the request's id.

Nothing here holds an endpoint's URL or the signing secret: a workflow names endpoints by
id, and the worker that delivers looks the URL and the secret up (an operator's endpoint,
`wh_...`, in its own settings; a project's endpoint, `we_...`, in the store, sealed), since a
URL can hold a token and history is kept for as long as Temporal keeps it.

The bodies of OpenAI's webhook endpoint routes (`/v1/webhook_endpoints`, `api/webhooks.py`)
are here too: a project's own endpoints, each taking the response events it names.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

ENDED_EVENT_TYPES = {
    "completed": "response.completed",
    "failed": "response.failed",
    "cancelled": "response.cancelled",
    "incomplete": "response.incomplete",
}
"""A background response's final status -> its event."""

ACTION_REQUIRED = "response.action_required"
IDENTIFIER_BLOCKED = "safety_identifier.blocked"
"""A project's end user (`safety_identifier`) had too many responses blocked: now refused."""

WebhookEventType = Literal[
    "response.completed",
    "response.failed",
    "response.cancelled",
    "response.incomplete",
    "response.action_required",
    "safety_identifier.blocked",
]
"""Every event a response sends; a project's endpoint takes those it names."""


def is_http_url(url: str) -> bool:
    """An http(s) URL with a host: where an event can be sent."""
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # an unclosed IPv6 bracket, a bad port
        return False


class WebhookEvent(BaseModel):
    id: str
    """`evt_...`; also the `webhook-id` of every delivery attempt, for receivers to de-duplicate."""
    object: Literal["event"] = "event"
    created_at: int
    type: str
    data: dict[str, Any]


def ended_event(event_id: str, response_id: str, status: str, created_at: int) -> WebhookEvent | None:
    event_type = ENDED_EVENT_TYPES.get(status)
    if event_type is None:
        return None
    return WebhookEvent(id=event_id, created_at=created_at, type=event_type, data={"id": response_id})


def action_required_event(event_id: str, response_id: str, approval_request_id: str, created_at: int) -> WebhookEvent:
    return WebhookEvent(
        id=event_id,
        created_at=created_at,
        type=ACTION_REQUIRED,
        data={
            "id": response_id,
            "required_action": {"type": "mcp_approval_request", "approval_request_id": approval_request_id},
        },
    )


def identifier_blocked_event(event_id: str, response_id: str, identifier: str, created_at: int) -> WebhookEvent:
    return WebhookEvent(
        id=event_id,
        created_at=created_at,
        type=IDENTIFIER_BLOCKED,
        data={"id": response_id, "safety_identifier": identifier},
    )


def endpoint_id(url: str) -> str:
    """A stable name for an endpoint's URL, the only thing history holds of it."""
    return "wh_" + hashlib.sha256(url.encode()).hexdigest()[:16]


class WebhookSubscription(BaseModel):
    """A project's endpoint (`/v1/webhook_endpoints`) and the event types it takes."""

    endpoint: str
    event_types: list[str]


class WebhookPolicy(BaseModel):
    """Where a response's events go and how long a delivery keeps trying; chosen by the API
    server from WEBHOOK_URLS and the response's project's endpoints, and fixed for the
    response's life."""

    endpoints: list[str] = Field(default_factory=list)
    """The operator's endpoint ids (`endpoint_id`), which take every event."""
    subscriptions: list[WebhookSubscription] = Field(default_factory=list)
    """The project's endpoints, each taking the events it names."""
    initial_interval_seconds: float = Field(default=5.0, gt=0)
    maximum_interval_seconds: float = Field(default=3600.0, gt=0)
    give_up_after_seconds: float = Field(default=72 * 3600.0, gt=0)
    """OpenAI retries a delivery for up to 72 hours; so does this server."""
    attempt_timeout_seconds: float = Field(default=30.0, gt=0)

    @property
    def sends(self) -> bool:
        return bool(self.endpoints or self.subscriptions)

    def targets(self, event_type: str) -> list[str]:
        """The endpoints an event of this type goes to."""
        return [
            *self.endpoints,
            *(subscription.endpoint for subscription in self.subscriptions if event_type in subscription.event_types),
        ]


class WebhookDeliveryInput(BaseModel):
    """The input of `WebhookDelivery`: one event to one endpoint."""

    endpoint: str
    event: WebhookEvent
    policy: WebhookPolicy


class WebhookDeliveryResult(BaseModel):
    status_code: int
    """The endpoint's answer to the attempt that delivered the event."""


class QueuedWebhook(BaseModel):
    event: WebhookEvent
    endpoints: list[str]


class EnqueueWebhooksInput(BaseModel):
    """Events of a response, each for its endpoints, into the outbox (`store/webhooks.py`)."""

    webhooks: list[QueuedWebhook]
    policy: WebhookPolicy


class EnqueueWebhooksResult(BaseModel):
    queued: int


class DeliverWebhookInput(BaseModel):
    endpoint: str
    event: WebhookEvent
    timeout_seconds: float


class DeliverWebhookResult(BaseModel):
    status_code: int


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
    event_types: list[WebhookEventType] = Field(min_length=1, max_length=5)

    _url = field_validator("url")(_checked_url)
    _event_types = field_validator("event_types")(_unique)


class UpdateWebhookEndpoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(default=None, min_length=1, max_length=256)
    url: str | None = Field(default=None, min_length=1, max_length=MAX_URL_CHARACTERS)
    event_types: list[WebhookEventType] | None = Field(default=None, min_length=1, max_length=5)

    _url = field_validator("url")(lambda url: url if url is None else _checked_url(url))
    _event_types = field_validator("event_types")(lambda types: types if types is None else _unique(types))


class RotateWebhookSecret(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keep_old_secret_active_for_24_hours: StrictBool = False


class WebhookTestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    event_type: WebhookEventType
