"""The turn's model call, with the workflow's own retries (`workflows/upstream_retry.py`).

Each attempt is one local activity, so each is its own marker in history with its failure;
between attempts a durable timer waits, and the current details say which attempt failed,
why, and when the next one comes. A response that started before this (no patch marker)
keeps the SDK's local retries it ran with.

Since the patch `upstream-capacity-waits`: waiting for a deployment's capacity (its budget had no slot near
enough, or it answered 429) spends no attempt; it is bounded by time instead
(`inference_queue_seconds`), and the details say "waiting for capacity on X". Other retries
wait a full-jitter backoff. When every attempt on the model's deployments failed with what a
retry could mend (5xx, timeouts, refused connections), the call fails over to the model's
fallbacks in order, each with attempts of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.activity_io import InferenceInput, InferenceResult
    from models.errors import ResponseFailedError
    from models.visibility import shown
    from models.workflow_io import RetryBudget
    from workflows import patches
    from workflows.failures import failed_attempt
    from workflows.options import local_activity_options, single_attempt_options
    from workflows.upstream_retry import capacity_delay, capacity_details, failover_details, retry_delay, retry_details


async def call_model(
    inference: InferenceInput,
    budget: RetryBudget,
    *,
    queue_seconds: float,
    fallbacks: Sequence[str] = (),
    about: str = "",
) -> tuple[InferenceResult, bool]:
    """The result, and whether the current details were changed on the way (retries, waits);
    `about`: what the response is, shown under them (`visibility.shown`)."""
    if not patches.taken(patches.UPSTREAM_ATTEMPTS_SHOWN):
        result = await workflow.execute_local_activity(
            activity_names.RUN_INFERENCE, inference, result_type=InferenceResult, **local_activity_options(budget)
        )
        return result, False
    paced = patches.taken(patches.UPSTREAM_CAPACITY_WAITS)
    attempt, waited, group, call = 1, 0.0, 0, inference
    while True:
        try:
            result = await workflow.execute_local_activity(
                activity_names.RUN_INFERENCE, call, result_type=InferenceResult, **single_attempt_options(budget)
            )
            return result, attempt > 1 or waited > 0 or group > 0
        except (ActivityError, ApplicationError) as error:
            failed = failed_attempt(error, attempt)
            if paced and failed.capacity:
                delay = capacity_delay(failed, waited, queue_seconds, workflow.random().random())
                if delay is None:
                    raise ResponseFailedError(
                        f"no capacity on {failed.deployment or 'the model'}'s deployments for {queue_seconds:g} s "
                        f"(rate limited: {failed.message})",
                        code="rate_limit_exceeded",
                    ) from None
                workflow.set_current_details(shown(capacity_details(failed, delay, waited, queue_seconds), about))
                await workflow.sleep(timedelta(seconds=delay))
                waited += delay
                call = call.model_copy(update={"returning": True})
                continue
            delay = retry_delay(failed, budget, workflow.random().random() if paced else None)
            if delay is None:
                if not (paced and failed.retryable and group < len(fallbacks)):
                    raise
                group, attempt = group + 1, 1
                call = inference.model_copy(
                    update={"model_group": fallbacks[group - 1], "max_attempts": inference.max_attempts * (group + 1)}
                )
                workflow.logger.warning(
                    "response %s fails over to model %s: %s",
                    inference.response.id,
                    fallbacks[group - 1],
                    failed.message,
                )
                workflow.set_current_details(shown(failover_details(failed, fallbacks[group - 1]), about))
                continue
            workflow.set_current_details(shown(retry_details(failed, budget, delay), about))
            await workflow.sleep(timedelta(seconds=delay))
            attempt += 1
