"""Webhook events of a response, each to each endpoint as a child workflow the response does
not wait for (`WebhookDelivery`, abandoned when the response ends): a receiver that is down
for hours neither holds up nor fails the response. As OpenAI does, only background responses
send events."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from temporalio import workflow
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from models.responses import Response
    from models.webhooks import WebhookDeliveryInput, WebhookDeliveryResult, WebhookEvent, WebhookPolicy

Events = Callable[[str, int], list[WebhookEvent | None]]
"""(event id, now) -> the events to send; called only when there is somewhere to send them,
so a response without webhooks draws no id from the workflow's random stream."""


async def send_webhooks(policy: WebhookPolicy, task_queue: str | None, response: Response, events: Events) -> None:
    """`task_queue`: where the deliveries run (None: the response's own queue)."""
    if not policy.sends or not response.background or not workflow.patched("webhooks-sent"):
        return
    for event in events(f"evt_{workflow.uuid4().hex}", int(workflow.now().timestamp())):
        if event is None:
            continue
        for endpoint in policy.targets(event.type):
            try:
                delivery = await workflow.start_child_workflow(
                    "WebhookDelivery", WebhookDeliveryInput(endpoint=endpoint, event=event, policy=policy),
                    id=f"{event.id}-{endpoint}", result_type=WebhookDeliveryResult,
                    parent_close_policy=ParentClosePolicy.ABANDON,
                    static_summary=f"{event.type} of {response.id} to {endpoint}",
                    **({"task_queue": task_queue} if task_queue else {}),
                )
                delivery.add_done_callback(_outcome_seen)  # its end is the delivery's own business
            except Exception as error:  # noqa: BLE001 - a delivery is never the response's failure
                workflow.logger.warning("webhook delivery %s-%s did not start: %s", event.id, endpoint, error)


def _outcome_seen(delivery: asyncio.Future) -> None:
    """The outcome of a delivery the response does not wait for is read, so that a failed one
    is not reported as an exception nobody retrieved (the delivery's workflow shows it)."""
    if not delivery.cancelled():
        delivery.exception()
