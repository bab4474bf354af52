"""Pure: after a failed inference attempt, whether to try again and when.

The workflow retries the model call itself (one local-activity attempt at a time, a durable
timer between them) rather than leaving it to the SDK's local retries, which collapse every
attempt into one history marker: this way each attempt is its own marker with its failure,
and the workflow's current details say which attempt failed, why, and when the next comes.
The policy is the one Temporal applies to the other activities (`workflows/options.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from models.workflow_io import RetryBudget

BACKOFF_COEFFICIENT = 2.0
MESSAGE_CHARACTERS = 300
"""How much of the last error the current details show."""


@dataclass(frozen=True)
class FailedAttempt:
    """What the workflow knows of a failed attempt (from its failure, no I/O)."""

    attempt: int
    """1 for the first call of the turn."""
    message: str
    retryable: bool
    """False for a failure retrying cannot mend (a refused request, a cancel)."""
    retry_after_seconds: float | None = None
    """The upstream's own `Retry-After`, which wins over the backoff."""


def retry_delay(failed: FailedAttempt, budget: RetryBudget) -> float | None:
    """Seconds to wait before the next attempt, or None when the turn has failed for good."""
    if not failed.retryable or failed.attempt >= budget.maximum_attempts:
        return None
    if failed.retry_after_seconds is not None and failed.retry_after_seconds > 0:
        return failed.retry_after_seconds
    backoff = budget.initial_interval_seconds * BACKOFF_COEFFICIENT ** (failed.attempt - 1)
    return min(backoff, budget.maximum_interval_seconds)


def retry_details(failed: FailedAttempt, budget: RetryBudget, delay: float) -> str:
    """The current details while the workflow waits to try the model again."""
    message = " ".join(failed.message.split())
    if len(message) > MESSAGE_CHARACTERS:
        message = message[:MESSAGE_CHARACTERS - 1] + "…"
    return (f"**inferring**: upstream attempt {failed.attempt} of {budget.maximum_attempts} failed: {message}"
            f"\n\nnext attempt in {delay:g} s")
