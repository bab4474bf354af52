"""`WebhookDelivery`: one event to one endpoint, until it is taken or the policy gives up.

A response starts one for each event and endpoint as a child it does not wait for (it is
abandoned when the response's workflow ends), so a receiver that is down for hours neither
holds up nor fails the response; and a worker that dies mid-delivery leaves the delivery to
the next one, with the same `webhook-id`.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from models.errors import WebhookRefusedError
    from models.webhooks import DeliverWebhookInput, DeliverWebhookResult, WebhookDeliveryInput, WebhookDeliveryResult


@workflow.defn(name="WebhookDelivery")
class WebhookDeliveryWorkflow:
    @workflow.run
    async def run(self, delivery: WebhookDeliveryInput) -> WebhookDeliveryResult:
        policy = delivery.policy
        result = await workflow.execute_activity(
            "deliver_webhook",
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
