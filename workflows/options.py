"""Timeouts and retry policies per activity, in one place."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityCancellationType

from models.errors import (
    CancelRequestedError,
    ContextWindowExceededError,
    McpRejectedError,
    RejectedByUpstreamError,
    SandboxFailedError,
    SecretsUnavailableError,
    StoreRefusedError,
)
from models.workflow_io import CodeExecution, RetryBudget

# Raised by activities for failures that retrying cannot mend.
NON_RETRYABLE = [
    RejectedByUpstreamError.__name__,
    CancelRequestedError.__name__,
    McpRejectedError.__name__,
    SecretsUnavailableError.__name__,
    ContextWindowExceededError.__name__,
    StoreRefusedError.__name__,
    SandboxFailedError.__name__,
]

# A local activity's retry backoff longer than this is a durable timer, not a sleep in the
# worker: the workflow task is released, so a cancel or a worker crash is handled at once.
LOCAL_RETRY_THRESHOLD = timedelta(seconds=2)


def _retry_policy(budget: RetryBudget) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=timedelta(seconds=budget.initial_interval_seconds),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=budget.maximum_interval_seconds),
        maximum_attempts=budget.maximum_attempts,
        non_retryable_error_types=NON_RETRYABLE,
    )


def local_activity_options(budget: RetryBudget) -> dict[str, Any]:
    return {
        "start_to_close_timeout": timedelta(seconds=budget.start_to_close_seconds),
        "local_retry_threshold": LOCAL_RETRY_THRESHOLD,
        "retry_policy": _retry_policy(budget),
    }


def single_attempt_options(budget: RetryBudget) -> dict[str, Any]:
    """One attempt; the workflow decides about the next (`workflows/upstream_retry.py`)."""
    return {
        "start_to_close_timeout": timedelta(seconds=budget.start_to_close_seconds),
        "retry_policy": RetryPolicy(maximum_attempts=1),
    }


def tool_call_options(
    budget: RetryBudget, heartbeat_seconds: float, *, wait_for_cancel: bool, task_queue: str | None = None
) -> dict[str, Any]:
    """A regular activity: it may run for hours on any worker, and is watched by heartbeats.
    `wait_for_cancel`: a cancelled workflow waits for the call to stop before it ends;
    `task_queue`: where it runs (None: the workflow's own queue)."""
    return {
        **({"task_queue": task_queue} if task_queue else {}),
        "start_to_close_timeout": timedelta(seconds=budget.start_to_close_seconds),
        "heartbeat_timeout": timedelta(seconds=heartbeat_seconds),
        "retry_policy": _retry_policy(budget),
        "cancellation_type": (
            ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
            if wait_for_cancel
            else ActivityCancellationType.TRY_CANCEL
        ),
    }


def search_call_options(budget: RetryBudget, task_queue: str | None = None) -> dict[str, Any]:
    """A web search: a regular activity, bounded by `budget` (no heartbeats: the provider's
    own timeout is shorter than its start-to-close)."""
    return {
        **({"task_queue": task_queue} if task_queue else {}),
        "start_to_close_timeout": timedelta(seconds=budget.start_to_close_seconds),
        "retry_policy": _retry_policy(budget),
    }


PLACE_CONTAINER_SECONDS = 60.0
CODE_HEARTBEAT_SECONDS = 10.0
CODE_MAXIMUM_ATTEMPTS = 10
"""A command's activity is tried again after its worker's death (it follows the command, which
went on running: it is never run twice); ten deaths in one call are a broken host."""


def place_container_options(execution: CodeExecution) -> dict[str, Any]:
    """Placing a container on a host: any worker that runs code takes it; with none running,
    the call fails after `host_wait_seconds` rather than waiting for ever."""
    return {
        "task_queue": execution.sandbox_task_queue,
        "schedule_to_close_timeout": timedelta(seconds=execution.host_wait_seconds),
        "start_to_close_timeout": timedelta(seconds=PLACE_CONTAINER_SECONDS),
        "retry_policy": RetryPolicy(maximum_interval=timedelta(seconds=10), non_retryable_error_types=NON_RETRYABLE),
    }


def run_command_options(execution: CodeExecution, host: str, command_seconds: float) -> dict[str, Any]:
    """A command on its container's host: taken by that host's worker within
    `host_wait_seconds` (a worker that restarts takes it up again) or the host is gone (a
    schedule-to-start timeout, which Temporal does not retry); watched by heartbeats; a cancel
    waits for the command to be interrupted."""
    return {
        "task_queue": execution.host_task_queue(host),
        "schedule_to_start_timeout": timedelta(seconds=execution.host_wait_seconds),
        "start_to_close_timeout": timedelta(seconds=command_seconds + PLACE_CONTAINER_SECONDS),
        "heartbeat_timeout": timedelta(seconds=CODE_HEARTBEAT_SECONDS),
        "retry_policy": RetryPolicy(
            initial_interval=timedelta(seconds=1),
            maximum_interval=timedelta(seconds=10),
            maximum_attempts=CODE_MAXIMUM_ATTEMPTS,
            non_retryable_error_types=NON_RETRYABLE,
        ),
        "cancellation_type": ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    }
