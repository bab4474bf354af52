"""How a turn's failures are told to Temporal: which retrying can mend (and after how long),
which spend none of the turn's attempts, and a turn that runs again after earlier
executions spent its budget."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.exceptions import ApplicationError

from models.errors import (
    CancelRequestedError,
    CapacityWaitError,
    RateLimitedUpstreamError,
    RetryableUpstreamError,
    UpstreamError,
)
from store.turns import TurnLost, TurnStart


def cancelled(error: CancelRequestedError) -> ApplicationError:
    return ApplicationError(str(error), type=type(error).__name__, non_retryable=True)


def failure_record(error: ApplicationError | None) -> dict[str, Any] | None:
    if error is None:
        return None
    return {"type": error.type, "message": error.message, "non_retryable": error.non_retryable}


def raise_if_spent(start: TurnStart, max_attempts: int) -> None:
    """A turn that runs again continues its retry budget: when earlier executions spent it,
    or met a failure retrying cannot mend, it fails at once as they did."""
    last = start.last_error
    if last is not None and (last["non_retryable"] or start.failures >= max_attempts):
        raise ApplicationError(last["message"], type=last["type"], non_retryable=True)


NOT_ATTEMPTS = frozenset({TurnLost.__name__, CapacityWaitError.__name__, RateLimitedUpstreamError.__name__})
"""Failures that spend none of a turn's attempts: a lost claim, and waiting for capacity."""


def to_application_error(error: UpstreamError, deployment: str | None = None) -> ApplicationError:
    if isinstance(error, RetryableUpstreamError):
        return ApplicationError(
            error.message,
            *([deployment] if deployment else []),
            type=type(error).__name__,
            next_retry_delay=timedelta(seconds=error.retry_after) if error.retry_after else None,
        )
    return ApplicationError(error.message, type=type(error).__name__, non_retryable=True)
