"""The I/O of sending webhooks: one signed POST of one event to one URL (`post_event`, which an
endpoint's test in the API makes too), and the activities a response's events take: into the
outbox (`enqueue_webhooks`, a local activity), and to one endpoint (`deliver_webhook`, the
dispatcher's attempt, and each attempt of a `WebhookDelivery` workflow of a response that
started before the outbox).

Each POST is signed afresh (its own `webhook-timestamp`) with the event's id as `webhook-id`,
so a receiver that got an earlier attempt can tell it is the same event. With more than one
key (a rotation that keeps the old secret a while) the header carries one signature per key,
as Standard Webhooks allows; a receiver holding either secret verifies it. Redirects are not
followed, and the answer's body is not read.

A 2xx is delivered; an address the egress policy refuses, or a project's endpoint deleted
since, is not tried again; anything else, or no answer, is tried again with backoff. Every
connection passes the egress policy, as MCP connections do."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

import httpx2
from temporalio import activity
from temporalio.exceptions import ApplicationError

from access.egress import EgressPolicy, EgressRefusedError, guarded_http_client
from models import activity_names
from models.errors import WebhookEndpointGoneError, WebhookRefusedError, WebhookUndeliveredError
from models.webhooks import (
    DeliverWebhookInput,
    DeliverWebhookResult,
    EnqueueWebhooksInput,
    EnqueueWebhooksResult,
    WebhookEvent,
)
from sealing.webhooks import signature
from store.webhooks import SigningEndpoint, WebhookEndpoints, WebhookOutbox
from telemetry import metrics

USER_AGENT = "durable-responses-webhooks/1"


async def post_event(
    url: str, keys: list[bytes], event: WebhookEvent, *, egress: EgressPolicy, timeout_seconds: float
) -> int:
    """The endpoint's HTTP status; raises what the connection raised (`egress_refused` tells
    a refused address from the rest)."""
    body = event.model_dump_json()
    timestamp = int(time.time())
    headers = {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": event.id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(signature(key, event.id, timestamp, body) for key in keys),
    }
    # Only the status counts: the body is never read (an endless one costs nothing), and the
    # whole exchange, headers trickling in included, has `timeout_seconds`.
    async with asyncio.timeout(timeout_seconds), guarded_http_client(egress, timeout=timeout_seconds) as http:
        async with http.stream("POST", url, content=body.encode(), headers=headers) as answer:
            return answer.status_code


def egress_refused(error: BaseException | None) -> bool:
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, EgressRefusedError):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


PROJECT_ENDPOINT_PREFIX = "we_"


class WebhookActivities:
    def __init__(
        self,
        endpoints: dict[str, str],
        key: bytes | None,
        egress: EgressPolicy,
        project_endpoints: WebhookEndpoints | None = None,
        outbox: WebhookOutbox | None = None,
    ) -> None:
        self.endpoints = endpoints
        """Endpoint id -> URL, from this worker's WEBHOOK_URLS."""
        self.key = key
        self.egress = egress
        self.project_endpoints = project_endpoints
        """A project's endpoints (`we_...`), looked up in the store at each attempt."""
        self.outbox = outbox

    @activity.defn(name=activity_names.ENQUEUE_WEBHOOKS)
    async def enqueue_webhooks(self, request: EnqueueWebhooksInput) -> EnqueueWebhooksResult:
        """A response's events into the outbox, for the dispatcher (idempotent)."""
        assert self.outbox is not None
        now_ms = int(time.time() * 1000)
        for queued in request.webhooks:
            await self.outbox.put(queued.endpoints, queued.event, request.policy, now_ms)
        return EnqueueWebhooksResult(queued=sum(len(queued.endpoints) for queued in request.webhooks))

    async def _endpoint(self, request: DeliverWebhookInput) -> SigningEndpoint:
        if request.endpoint.startswith(PROJECT_ENDPOINT_PREFIX) and self.project_endpoints is not None:
            found = await self.project_endpoints.signing(request.endpoint)
            if found is None:
                # Deleted since the response was created: nobody wants the event any more.
                metrics.webhook_attempt(request.event.type, "gone", 0.0)
                raise ApplicationError(
                    f"webhook endpoint {request.endpoint} was deleted (or its secrets were sealed "
                    "with another SECRETS_KEY)",
                    type=WebhookEndpointGoneError.__name__,
                    non_retryable=True,
                )
            return found
        url = self.endpoints.get(request.endpoint)
        if url is None or self.key is None:
            # A worker configured otherwise (in a rollout, say): tried again, so a worker that
            # knows the endpoint delivers it, within the policy's time.
            metrics.webhook_attempt(request.event.type, "unknown_endpoint", 0.0)
            raise _undelivered(
                f"webhook endpoint {request.endpoint} is not configured on this worker "
                "(WEBHOOK_URLS, WEBHOOK_SECRET); a worker that has it will deliver it"
            )
        return SigningEndpoint(url=url, keys=[self.key])

    @activity.defn(name=activity_names.DELIVER_WEBHOOK)
    async def deliver_webhook(self, request: DeliverWebhookInput) -> DeliverWebhookResult:
        endpoint = await self._endpoint(request)
        host = urlsplit(endpoint.url).hostname or "?"
        started = time.perf_counter()
        try:
            status_code = await post_event(
                endpoint.url, endpoint.keys, request.event, egress=self.egress, timeout_seconds=request.timeout_seconds
            )
        except Exception as error:  # noqa: BLE001 - each failure is classified below
            if egress_refused(error):
                raise _refused(
                    f"webhook endpoint {request.endpoint} ({host}) may not be reached from this server (egress policy)",
                    request.event.type,
                ) from None
            metrics.webhook_attempt(request.event.type, "unreachable", time.perf_counter() - started)
            reason = (
                "did not answer in time"
                if isinstance(error, httpx2.TimeoutException)
                else f"cannot be reached ({type(error).__name__})"
            )
            raise _undelivered(f"webhook endpoint {request.endpoint} ({host}) {reason}") from None
        if 200 <= status_code < 300:
            metrics.webhook_attempt(request.event.type, "delivered", time.perf_counter() - started)
            return DeliverWebhookResult(status_code=status_code)
        metrics.webhook_attempt(request.event.type, "rejected", time.perf_counter() - started)
        raise _undelivered(f"webhook endpoint {request.endpoint} ({host}) answered HTTP {status_code}")


def _refused(message: str, event_type: str) -> ApplicationError:
    metrics.webhook_attempt(event_type, "refused", 0.0)
    return ApplicationError(message, type=WebhookRefusedError.__name__, non_retryable=True)


def _undelivered(message: str) -> ApplicationError:
    return ApplicationError(message, type=WebhookUndeliveredError.__name__)
