"""The turn's model call, with the workflow's own retries (`workflows/upstream_retry.py`).

Each attempt is one local activity, so each is its own marker in history with its failure;
between attempts a durable timer waits, and the current details say which attempt failed,
why, and when the next one comes. A response that started before this (no patch marker)
keeps the SDK's local retries it ran with.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from models.activity_io import InferenceInput, InferenceResult
    from models.workflow_io import RetryBudget
    from workflows.failures import failed_attempt
    from workflows.options import local_activity_options, single_attempt_options
    from workflows.upstream_retry import retry_delay, retry_details


async def call_model(inference: InferenceInput, budget: RetryBudget) -> tuple[InferenceResult, int]:
    """The result, and how many attempts it took."""
    if not workflow.patched("upstream-attempts-shown"):
        result = await workflow.execute_local_activity("run_inference", inference, result_type=InferenceResult,
                                                       **local_activity_options(budget))
        return result, 1
    attempt = 1
    while True:
        try:
            result = await workflow.execute_local_activity("run_inference", inference, result_type=InferenceResult,
                                                           **single_attempt_options(budget))
            return result, attempt
        except (ActivityError, ApplicationError) as error:
            failed = failed_attempt(error, attempt)
            delay = retry_delay(failed, budget)
            if delay is None:
                raise
            workflow.set_current_details(retry_details(failed, budget, delay))
            await workflow.sleep(timedelta(seconds=delay))
            attempt += 1
