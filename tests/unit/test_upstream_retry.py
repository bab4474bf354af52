"""The workflow's retry policy for model calls (pure), by property."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chat_completions.client import MAX_RETRY_AFTER_SECONDS, retry_after_seconds
from models.workflow_io import RetryBudget
from workflows.upstream_retry import (
    CAPACITY_SPREAD,
    MAX_WAIT_FLOOR_SECONDS,
    MESSAGE_CHARACTERS,
    RATE_LIMITED_WAIT_SECONDS,
    WAIT_GROWTH,
    FailedAttempt,
    capacity_delay,
    capacity_details,
    retry_delay,
    retry_details,
)

budgets = st.builds(
    RetryBudget,
    start_to_close_seconds=st.just(30.0),
    maximum_attempts=st.integers(1, 20),
    initial_interval_seconds=st.floats(0.01, 10),
    maximum_interval_seconds=st.floats(0.01, 60),
)
failures = st.builds(
    FailedAttempt,
    attempt=st.integers(1, 25),
    message=st.text(max_size=2000),
    retryable=st.booleans(),
    retry_after_seconds=st.none() | st.floats(0, 3600),
)


@given(failures, budgets)
def test_a_turn_is_tried_at_most_its_budget_and_never_after_a_failure_retrying_cannot_mend(
    failed: FailedAttempt, budget: RetryBudget
):
    delay = retry_delay(failed, budget)
    if not failed.retryable or failed.attempt >= budget.maximum_attempts:
        assert delay is None
    else:
        assert delay is not None and delay > 0


@given(failures, budgets)
def test_the_wait_is_the_upstreams_retry_after_or_a_capped_backoff(failed: FailedAttempt, budget: RetryBudget):
    delay = retry_delay(failed, budget)
    if delay is None:
        return
    if failed.retry_after_seconds:
        assert delay == failed.retry_after_seconds
    else:
        assert budget.initial_interval_seconds <= delay or delay == budget.maximum_interval_seconds
        assert delay <= budget.maximum_interval_seconds


@given(st.integers(1, 8), st.floats(0.01, 5))
def test_the_backoff_grows(attempt: int, initial: float):
    budget = RetryBudget(
        start_to_close_seconds=30, maximum_attempts=10, initial_interval_seconds=initial, maximum_interval_seconds=1e6
    )
    first = retry_delay(FailedAttempt(attempt=attempt, message="", retryable=True), budget)
    second = retry_delay(FailedAttempt(attempt=attempt + 1, message="", retryable=True), budget)
    assert first is not None and second is not None and second == 2 * first


@given(failures, budgets, st.floats(0.01, 3600))
def test_the_details_are_one_bounded_story(failed: FailedAttempt, budget: RetryBudget, delay: float):
    shown = retry_details(failed, budget, delay)
    assert f"attempt {failed.attempt} of {budget.maximum_attempts}" in shown
    assert len(shown) < MESSAGE_CHARACTERS + 200


@given(
    st.dictionaries(
        st.sampled_from(["retry-after", "retry-after-ms"]),
        st.one_of(
            st.text(max_size=40),
            st.floats(allow_nan=True, allow_infinity=True).map(str),
            st.sampled_from(["Wed, 21 Oct 2015 07:28:00 GMT", "Fri, 01 Jan 2100 00:00:00 GMT", "1e400", "-inf"]),
        ),
    )
)
def test_any_retry_after_an_upstream_sends_is_a_bounded_wait_or_nothing(headers: dict[str, str]):
    """Whatever the upstream says, a response waits at most MAX_RETRY_AFTER_SECONDS between
    attempts, so it ends in bounded time; an unreadable header is no header."""
    wait = retry_after_seconds(headers)
    assert wait is None or 0 <= wait <= MAX_RETRY_AFTER_SECONDS


@given(failures, budgets, st.floats(0, 1))
def test_full_jitter_waits_at_most_the_backoff_and_never_nothing(
    failed: FailedAttempt, budget: RetryBudget, jitter: float
):
    plain, jittered = retry_delay(failed, budget), retry_delay(failed, budget, jitter)
    assert (plain is None) == (jittered is None)
    if plain is not None and jittered is not None and not failed.retry_after_seconds:
        assert 0 < jittered <= plain


capacity_waits = st.builds(
    FailedAttempt,
    attempt=st.integers(1, 25),
    message=st.text(max_size=2000),
    retryable=st.just(True),
    retry_after_seconds=st.none() | st.floats(0, 300),
    capacity=st.just(True),
    deployment=st.none() | st.text(max_size=300),
)


@given(capacity_waits, st.floats(0, 10_000), st.floats(0.001, 10_000), st.floats(0, 1))
def test_a_capacity_wait_is_bounded_by_time_and_spread(
    failed: FailedAttempt, waited: float, queue: float, jitter: float
):
    delay = capacity_delay(failed, waited, queue, jitter)
    base = failed.retry_after_seconds or RATE_LIMITED_WAIT_SECONDS
    floor = min(waited * WAIT_GROWTH, MAX_WAIT_FLOOR_SECONDS)
    if delay is None:
        assert waited + max(base, floor) > queue - 1e-9 or waited + base * (1 + CAPACITY_SPREAD * jitter) > queue
        return
    assert max(base, floor) <= delay <= max(base * (1 + CAPACITY_SPREAD), floor) + 1e-9 and waited + delay <= queue
    shown = capacity_details(failed, delay, waited, queue)
    assert shown.startswith("**inferring**: waiting for capacity on ") and len(shown) < MESSAGE_CHARACTERS + 600


def test_a_day_long_outage_costs_a_few_hundred_tries_not_one_a_second():
    """A backend answering 429 (retry-after: 1) for the whole queue time: the tries stay few, so
    the response's history stays far from Temporal's limits."""
    failed = FailedAttempt(attempt=1, message="429", retryable=True, retry_after_seconds=1.0, capacity=True)
    waited, tries = 0.0, 0
    while (delay := capacity_delay(failed, waited, 24 * 3600.0, 0.5)) is not None:
        waited, tries = waited + delay, tries + 1
    assert waited > 23 * 3600 and tries < 500
