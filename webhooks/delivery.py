"""The `deliver_webhook` activity: one signed POST of one event to one endpoint.

Each attempt is signed afresh (its own `webhook-timestamp`) with the same `webhook-id`, the
event's id, so a receiver that got an earlier attempt can tell it is the same event. A 2xx
is delivered; an address the egress policy refuses is not tried again; anything else, or no answer, is tried again by Temporal with backoff. Redirects
are not followed, and every connection passes the egress policy, as MCP connections do.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import httpx2
from temporalio import activity
from temporalio.exceptions import ApplicationError

from access.egress import EgressPolicy, EgressRefusedError, guarded_http_client
from models.errors import WebhookRefusedError, WebhookUndeliveredError
from models.webhooks import DeliverWebhookInput, DeliverWebhookResult
from telemetry import metrics
from webhooks.signing import signature

USER_AGENT = "durable-responses-webhooks/1"


class WebhookActivities:
    def __init__(self, endpoints: dict[str, str], key: bytes | None, egress: EgressPolicy) -> None:
        self.endpoints = endpoints
        """Endpoint id -> URL, from this worker's WEBHOOK_URLS."""
        self.key = key
        self.egress = egress

    @activity.defn(name="deliver_webhook")
    async def deliver_webhook(self, request: DeliverWebhookInput) -> DeliverWebhookResult:
        url = self.endpoints.get(request.endpoint)
        if url is None or self.key is None:
            # A worker configured otherwise (in a rollout, say): tried again, so a worker that
            # knows the endpoint delivers it, within the policy's time.
            metrics.webhook_attempt(request.event.type, "unknown_endpoint", 0.0)
            raise _undelivered(f"webhook endpoint {request.endpoint} is not configured on this worker "
                               "(WEBHOOK_URLS, WEBHOOK_SECRET); a worker that has it will deliver it")
        host = urlsplit(url).hostname or "?"
        body = request.event.model_dump_json()
        timestamp = int(time.time())
        headers = {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            "webhook-id": request.event.id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature(self.key, request.event.id, timestamp, body),
        }
        started = time.perf_counter()
        try:
            async with guarded_http_client(self.egress, timeout=request.timeout_seconds) as http:
                answer = await http.post(url, content=body.encode(), headers=headers)
        except Exception as error:  # noqa: BLE001 - each failure is classified below
            if _egress_refused(error):
                raise _refused(f"webhook endpoint {request.endpoint} ({host}) may not be reached from this server "
                               "(egress policy)", request.event.type) from None
            metrics.webhook_attempt(request.event.type, "unreachable", time.perf_counter() - started)
            reason = "did not answer in time" if isinstance(error, httpx2.TimeoutException) else \
                f"cannot be reached ({type(error).__name__})"
            raise _undelivered(f"webhook endpoint {request.endpoint} ({host}) {reason}") from None
        if 200 <= answer.status_code < 300:
            metrics.webhook_attempt(request.event.type, "delivered", time.perf_counter() - started)
            return DeliverWebhookResult(status_code=answer.status_code)
        metrics.webhook_attempt(request.event.type, "rejected", time.perf_counter() - started)
        raise _undelivered(f"webhook endpoint {request.endpoint} ({host}) answered HTTP {answer.status_code}")


def _egress_refused(error: BaseException | None) -> bool:
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, EgressRefusedError):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def _refused(message: str, event_type: str) -> ApplicationError:
    metrics.webhook_attempt(event_type, "refused", 0.0)
    return ApplicationError(message, type=WebhookRefusedError.__name__, non_retryable=True)


def _undelivered(message: str) -> ApplicationError:
    return ApplicationError(message, type=WebhookUndeliveredError.__name__)
