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
    capacity: bool = False
    """A wait for the deployment's capacity (a 429, or no slot in its budget): no attempt."""
    deployment: str | None = None
    """Which deployment had no capacity."""


CAPACITY_SPREAD = 0.1
"""Waits for capacity are stretched by up to this share at random, so waiters told the same
time (a 429's `retry-after`) do not all come back in the same instant."""
RATE_LIMITED_WAIT_SECONDS = 1.0
"""A 429 with no `retry-after`: come back after about this long (the budget paces from then)."""


def retry_delay(failed: FailedAttempt, budget: RetryBudget, jitter: float | None = None) -> float | None:
    """Seconds to wait before the next attempt, or None when the turn has failed for good.
    `jitter` (0 to 1, drawn by the caller): full jitter, a uniform wait up to the backoff, so
    responses that failed together do not come back together; None: the plain backoff."""
    if not failed.retryable or failed.attempt >= budget.maximum_attempts:
        return None
    if failed.retry_after_seconds is not None and failed.retry_after_seconds > 0:
        return failed.retry_after_seconds
    backoff = min(
        budget.initial_interval_seconds * BACKOFF_COEFFICIENT ** (failed.attempt - 1), budget.maximum_interval_seconds
    )
    return backoff if jitter is None else max(0.001, backoff * jitter)


WAIT_GROWTH = 0.05
MAX_WAIT_FLOOR_SECONDS = 300.0
"""A response that has waited `w` seconds in all waits at least `w * WAIT_GROWTH` (at most five
minutes) before its next try: a long outage (a backend answering 429 for a day) costs a few
hundred tries in its history, not one every second, and a week's wait stays far below
Temporal's history limits."""


def capacity_delay(failed: FailedAttempt, waited: float, queue_seconds: float, jitter: float) -> float | None:
    """Seconds to wait for a deployment's capacity, or None when the response has waited its
    `queue_seconds` in all."""
    said = failed.retry_after_seconds
    delay = (said if said is not None and said > 0 else RATE_LIMITED_WAIT_SECONDS) * (1 + CAPACITY_SPREAD * jitter)
    delay = max(delay, min(waited * WAIT_GROWTH, MAX_WAIT_FLOOR_SECONDS))
    if waited + delay > queue_seconds:
        return None
    return delay


def capacity_details(failed: FailedAttempt, delay: float, waited: float, queue_seconds: float) -> str:
    return (
        f"**inferring**: waiting for capacity on {failed.deployment or 'the model'} "
        f"({_short(failed.message)}); next try in {delay:.2f} s, waited {waited:.1f} of {queue_seconds:g} s"
    )


def failover_details(failed: FailedAttempt, fallback: str) -> str:
    return f"**inferring**: failing over to model {fallback} after: {_short(failed.message)}"


def _short(message: str) -> str:
    message = " ".join(message.split())
    return message[: MESSAGE_CHARACTERS - 1] + "…" if len(message) > MESSAGE_CHARACTERS else message


def retry_details(failed: FailedAttempt, budget: RetryBudget, delay: float) -> str:
    """The current details while the workflow waits to try the model again."""
    return (
        f"**inferring**: upstream attempt {failed.attempt} of {budget.maximum_attempts} failed: "
        f"{_short(failed.message)}"
        f"\n\nnext attempt in {round(delay, 1):g} s"
    )
