"""A wait for capacity (a call its deployment's budget deferred), as every activity tells it
to Temporal: how pacing works, not a failure. It comes back after the wait, and is benign, so
Temporal's activity logger keeps it at DEBUG (no traceback for a deferral) and counts no
failure."""

from __future__ import annotations

from datetime import timedelta

from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from models.errors import CapacityWaitError


def capacity_wait(
    error: CapacityWaitError, *details: object, non_retryable: bool = False, least_seconds: float = 0.1
) -> ApplicationError:
    """`non_retryable`: the workflow, not Temporal's retry, brings the call back (a turn's model
    call); `least_seconds`: the shortest wait said."""
    return ApplicationError(
        str(error),
        *details,
        type=type(error).__name__,
        non_retryable=non_retryable,
        next_retry_delay=timedelta(seconds=max(error.wait_seconds, least_seconds)),
        category=ApplicationErrorCategory.BENIGN,
    )
