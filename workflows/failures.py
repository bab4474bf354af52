"""Pure: what a failed activity means to a response, read from Temporal's exception (no
workflow API, no I/O)."""

from __future__ import annotations

from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType, is_cancelled_exception

from models.errors import CancelRequestedError, CapacityWaitError, ContextWindowExceededError, RateLimitedUpstreamError
from models.items import McpCallItem
from workflows.options import NON_RETRYABLE
from workflows.upstream_retry import FailedAttempt

CAPACITY = frozenset({CapacityWaitError.__name__, RateLimitedUpstreamError.__name__})
"""Failures that mean "wait for the deployment's capacity", not "this attempt failed"."""


def application_failure(error: ActivityError | ApplicationError) -> ApplicationError | None:
    """The activity's own failure: a local activity's arrives as its ApplicationError, a
    regular one's as the cause of an ActivityError."""
    cause = error.cause if isinstance(error, ActivityError) else error
    return cause if isinstance(cause, ApplicationError) else None


ERROR_CODES = {ContextWindowExceededError.__name__: ContextWindowExceededError.code}
"""The response's `error.code` for a failure of these types (else `server_error`)."""


def error_code(failure: ApplicationError | None) -> str:
    return ERROR_CODES.get(failure.type or "", "server_error") if failure is not None else "server_error"


def failed_attempt(error: ActivityError | ApplicationError, attempt: int) -> FailedAttempt:
    if is_cancelled_exception(error):
        return FailedAttempt(attempt=attempt, message="cancelled", retryable=False)
    failure = application_failure(error)
    if failure is None:  # a timeout, or a worker that lost the call
        cause = error.cause if isinstance(error, ActivityError) else None
        return FailedAttempt(attempt=attempt, message=str(cause or error), retryable=True)
    wait = failure.next_retry_delay.total_seconds() if failure.next_retry_delay else None
    if failure.type in CAPACITY:
        deployment = failure.details[0] if failure.details and isinstance(failure.details[0], str) else None
        return FailedAttempt(
            attempt=attempt,
            message=failure.message,
            retry_after_seconds=wait,
            retryable=True,
            capacity=True,
            deployment=deployment,
        )
    return FailedAttempt(
        attempt=attempt,
        message=failure.message,
        retry_after_seconds=wait,
        retryable=not failure.non_retryable and failure.type not in NON_RETRYABLE,
    )


def is_cancel_request(error: ActivityError | ApplicationError) -> bool:
    """The activity saw the client's cancel in the store and stopped."""
    failure = application_failure(error)
    return failure is not None and failure.type == CancelRequestedError.__name__


def call_failure(error: ActivityError, call: McpCallItem, heartbeat_seconds: float) -> tuple[int, str]:
    """An HTTP-like code and a message for a call that ran out of attempts."""
    cause = error.cause
    if isinstance(cause, TimeoutError) and cause.type == TimeoutType.HEARTBEAT:
        return 504, (
            f"MCP server '{call.server_label}' stopped responding while running '{call.name}': "
            f"no heartbeat for {heartbeat_seconds:g} s"
        )
    if isinstance(cause, TimeoutError):
        return 504, f"MCP tool '{call.name}' on server '{call.server_label}' did not finish in time"
    if isinstance(cause, ApplicationError):
        details = cause.details[0] if cause.details else {}
        code = details.get("code", 502) if isinstance(details, dict) else 502
        return int(code) if isinstance(code, int) and code >= 100 else 502, cause.message
    return 502, f"MCP tool '{call.name}' on server '{call.server_label}' failed: {cause or error}"


def host_is_gone(error: ActivityError) -> bool:
    """No worker of the container's host took its command in time: the host is gone."""
    cause = error.cause
    return isinstance(cause, TimeoutError) and cause.type == TimeoutType.SCHEDULE_TO_START
