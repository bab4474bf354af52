"""Webhook events of a response, into the outbox (`store/webhooks.py`) by a local
activity: the dispatcher delivers them per endpoint (`worker/webhooks.py`), so a receiver
that is down for hours neither holds up nor fails the response, and its backlog is rows in
one table. A response that started before the outbox starts a child workflow an event and
endpoint (`WebhookDelivery`, abandoned when the response ends), as it did. As OpenAI does,
only background responses send events.

`WebhookDelivery` is that child: one event to one endpoint, until it is taken or the policy
gives up, with the same `webhook-id` on every attempt. It stays registered while responses
that started before the outbox may still run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.errors import WebhookRefusedError
    from models.responses import Response
    from models.webhooks import (
        DeliverWebhookInput,
        DeliverWebhookResult,
        EnqueueWebhooksInput,
        EnqueueWebhooksResult,
        QueuedWebhook,
        WebhookDeliveryInput,
        WebhookDeliveryResult,
        WebhookEvent,
        WebhookPolicy,
    )
    from models.workflow_io import RetryBudget
    from workflows import patches
    from workflows.options import local_activity_options


Events = Callable[[str, int], list[WebhookEvent | None]]
"""(event id, now) -> the events to send; called only when there is somewhere to send them,
so a response without webhooks draws no id from the workflow's random stream."""


async def send_webhooks(
    policy: WebhookPolicy,
    task_queue: str | None,
    response: Response,
    events: Events,
    store: RetryBudget,
    *,
    any_response: bool = False,
) -> None:
    """`task_queue`: where the deliveries of a response that started before the outbox run
    (None: the response's own queue); `store`: the outbox write's budget; `any_response`:
    events that are not the response's own (a blocked `safety_identifier`), sent whether it
    runs in the background or not."""
    if not policy.sends or not (response.background or any_response) or not patches.taken(patches.WEBHOOKS_SENT):
        return
    made = events(f"evt_{workflow.uuid4().hex}", int(workflow.now().timestamp()))
    if patches.taken(patches.WEBHOOKS_OUTBOX):
        queued = [QueuedWebhook(event=event, endpoints=policy.targets(event.type)) for event in made if event]
        queued = [each for each in queued if each.endpoints]
        if not queued:
            return
        try:
            await workflow.execute_local_activity(
                activity_names.ENQUEUE_WEBHOOKS,
                EnqueueWebhooksInput(webhooks=queued, policy=policy),
                result_type=EnqueueWebhooksResult,
                **local_activity_options(store),
            )
        except ActivityError as error:  # the store is down past its budget: never the response's failure
            workflow.logger.warning("webhook events of %s were not queued: %s", response.id, error.cause)
        return
    for event in made:
        if event is None:
            continue
        for endpoint in policy.targets(event.type):
            try:
                delivery = await workflow.start_child_workflow(
                    "WebhookDelivery",
                    WebhookDeliveryInput(endpoint=endpoint, event=event, policy=policy),
                    id=f"{event.id}-{endpoint}",
                    result_type=WebhookDeliveryResult,
                    parent_close_policy=ParentClosePolicy.ABANDON,
                    static_summary=f"{event.type} of {response.id} to {endpoint}",
                    task_queue=task_queue or None,  # None: the response's own queue
                )
                delivery.add_done_callback(_outcome_seen)  # its end is the delivery's own business
            except Exception as error:  # noqa: BLE001 - a delivery is never the response's failure
                workflow.logger.warning("webhook delivery %s-%s did not start: %s", event.id, endpoint, error)


def _outcome_seen(delivery: asyncio.Future[Any]) -> None:
    """The outcome of a delivery the response does not wait for is read, so that a failed one
    is not reported as an exception nobody retrieved (the delivery's workflow shows it)."""
    if not delivery.cancelled():
        delivery.exception()


@workflow.defn(name="WebhookDelivery")
class WebhookDeliveryWorkflow:
    @workflow.run
    async def run(self, delivery: WebhookDeliveryInput) -> WebhookDeliveryResult:
        policy = delivery.policy
        result = await workflow.execute_activity(
            activity_names.DELIVER_WEBHOOK,
            DeliverWebhookInput(
                endpoint=delivery.endpoint, event=delivery.event, timeout_seconds=policy.attempt_timeout_seconds
            ),
            result_type=DeliverWebhookResult,
            start_to_close_timeout=timedelta(seconds=policy.attempt_timeout_seconds + 5),
            schedule_to_close_timeout=timedelta(seconds=policy.give_up_after_seconds),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=policy.initial_interval_seconds),
                backoff_coefficient=2.0,
                maximum_interval=timedelta(seconds=policy.maximum_interval_seconds),
                maximum_attempts=0,  # until the policy's time runs out
                non_retryable_error_types=[WebhookRefusedError.__name__],
            ),
        )
        return WebhookDeliveryResult(status_code=result.status_code)
