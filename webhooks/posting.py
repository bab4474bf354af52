"""One signed POST of one event to one URL, through the egress policy: what a delivery
attempt (`webhooks/delivery.py`) and an endpoint's test (`POST /v1/webhook_endpoints/{id}/test`)
both do.

Each POST is signed afresh (its own `webhook-timestamp`) with the event's id as `webhook-id`,
so a receiver that got an earlier attempt can tell it is the same event. With more than one
key (a rotation that keeps the old secret a while) the header carries one signature per key,
as Standard Webhooks allows; a receiver holding either secret verifies it. Redirects are not
followed, and the answer's body is not read.
"""

from __future__ import annotations

import asyncio
import time

from access.egress import EgressPolicy, EgressRefusedError, guarded_http_client
from models.webhooks import WebhookEvent
from webhooks.signing import signature

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
