"""The upstream budget's rules, pure: pacing a deployment's calls, sharing it between projects, and
what a 429 or a provider's rate-limit headers teach it."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chat_completions.client import MAX_RETRY_AFTER_SECONDS, exhausted_for
from upstream import pacing
from upstream.pacing import BudgetState, Defer, Grant, Limits

arrivals = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=0.5),
        st.sampled_from(["interactive", "background"]),
        st.sampled_from(["a", "b", "c"]),
    ),
    min_size=1,
    max_size=200,
)


@given(st.floats(min_value=0.5, max_value=500), arrivals)
@settings(max_examples=200, deadline=None)
def test_granted_calls_never_start_closer_than_the_rate_allows(rate, steps):
    limits, state, now = Limits(rate=rate), BudgetState(), 1000.0
    clocks: dict[tuple[str, str], float] = {}
    starts = []
    for gap, lane, project in steps:
        now += gap
        decision, state, clocks[(lane, project)] = pacing.reserve(
            state, limits, now, lane, clocks.get((lane, project), 0.0)
        )
        if isinstance(decision, Grant):
            assert 0 <= decision.wait_seconds <= pacing.horizon(lane) + 1e-9
            starts.append(now + decision.wait_seconds)
        else:
            assert decision.wait_seconds > 0
    starts.sort()
    assert all(later - earlier >= 1 / rate - 1e-6 for earlier, later in pairwise(starts))


@given(st.integers(min_value=1, max_value=500), st.floats(min_value=1, max_value=100))
@settings(max_examples=100, deadline=None)
def test_an_interactive_call_finds_a_slot_within_its_horizon_whatever_background_work_waits(flood, rate):
    limits, state, now, clock = Limits(rate=rate), BudgetState(), 50.0, 0.0
    for _ in range(flood):  # a burst of background calls at one instant
        _, state, clock = pacing.reserve(state, limits, now, "background", clock)
    decision, _, _ = pacing.reserve(state, limits, now, "interactive", 0.0)
    # background work reserves no further ahead than its own horizon: the next slot after it is ours
    assert isinstance(decision, Grant) and decision.wait_seconds <= pacing.BACKGROUND_HORIZON + 1 / rate + 1e-9


def test_deferred_calls_come_back_one_per_slot_and_each_project_in_its_own_turn():
    limits, state, now = Limits(rate=10), BudgetState(), 0.0
    clocks = {"a": 0.0, "b": 0.0}
    backs = {"a": [], "b": []}
    for project in ["a"] * 50 + ["b"]:
        decision, state, clocks[project] = pacing.reserve(state, limits, now, "background", clocks[project])
        if isinstance(decision, Defer):
            backs[project].append(decision.wait_seconds)
    assert all(later - earlier == pytest.approx(0.1) for earlier, later in pairwise(backs["a"]))
    assert backs["b"][0] < 1.0 < backs["a"][-1]  # b's one call is not behind a's fifty


@given(st.integers(min_value=1, max_value=300), st.floats(min_value=0, max_value=1))
@settings(deadline=None)
def test_a_call_that_finds_its_slot_taken_keeps_its_place_near_the_front(backlog, spread):
    limits, state, now, clock = Limits(rate=10), BudgetState(), 0.0, 0.0
    for _ in range(backlog):  # the project's other calls, deferred to their turns
        _, state, clock = pacing.reserve(state, limits, now, "background", clock)
    state = pacing.rate_limited(state, limits, now, retry_after=2.0, sending_rate=None, provider_rate=10.0)
    decision, _, after = pacing.reserve(state, limits, now, "background", clock, returning=True, spread=spread)
    assert isinstance(decision, Defer) and after == clock  # the project's turns are not moved on
    frontier = pacing.earliest_start(state, limits, now) - pacing.BACKGROUND_HORIZON
    assert frontier - 1e-9 <= decision.wait_seconds <= frontier + pacing.RETURNING_SPREAD_SLOTS / 10 + 1e-9


def test_a_429_cuts_once_per_overload_blocks_until_retry_after_and_the_rate_grows_back():
    limits = Limits()
    cut = pacing.rate_limited(BudgetState(), limits, 100.0, retry_after=1.0, sending_rate=20.0)
    assert cut.learned_rate == pytest.approx(14.0) and cut.blocked_until == 101.0
    again = pacing.rate_limited(cut, limits, 100.5, retry_after=1.0, sending_rate=20.0)
    assert again.learned_rate == cut.learned_rate and again.blocked_until == 101.5  # the same overload
    assert pacing.earliest_start(again, limits, 100.6) >= 101.5
    assert pacing.rate(again, limits, 110.0) == pytest.approx(14.0 + 10.0)  # +1 request/s each second
    assert pacing.rate(again, limits, 100.0 + pacing.FORGET_AFTER_SECONDS + 1) is None
    told = pacing.rate_limited(BudgetState(), limits, 100.0, retry_after=None, sending_rate=None, provider_rate=5.0)
    assert told.learned_rate == 5.0
    capped = pacing.rate_limited(BudgetState(), Limits(rate=2.0), 100.0, retry_after=None, sending_rate=50.0)
    assert capped.learned_rate == pytest.approx(1.4)


@given(st.floats(allow_nan=True, allow_infinity=True) | st.none(), st.floats(min_value=0, max_value=1e12))
def test_any_retry_after_blocks_a_bounded_time(retry_after, now):
    after = pacing.rate_limited(BudgetState(), Limits(), now, retry_after=retry_after, sending_rate=None)
    assert now <= after.blocked_until <= now + pacing.MAX_BLOCK_SECONDS or retry_after != retry_after


@given(
    st.dictionaries(
        st.sampled_from(["x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"]),
        st.one_of(
            st.text(max_size=20),
            st.sampled_from(["0", "1", "0.0", "6m0s", "20ms", "1h", "nan", "1e400", "-5s", "2.5s"]),
        ),
    )
)
def test_a_providers_ratelimit_headers_are_a_bounded_wait_or_nothing(headers):
    wait = exhausted_for(headers)
    if wait is not None:  # only when the provider said none is left, and never longer than a retry-after
        assert float(headers["x-ratelimit-remaining-requests"]) == 0
        assert 0 <= wait <= MAX_RETRY_AFTER_SECONDS


def test_openais_reset_durations_are_read():
    said = {"x-ratelimit-remaining-requests": "0"}
    assert exhausted_for(said | {"x-ratelimit-reset-requests": "6m0s"}) == 300  # bounded, as retry-after is
    assert exhausted_for(said | {"x-ratelimit-reset-requests": "1m30s"}) == 90
    assert exhausted_for(said | {"x-ratelimit-reset-requests": "20ms"}) == pytest.approx(0.02)
    assert exhausted_for(said | {"x-ratelimit-reset-requests": "2.5"}) == 2.5
    assert exhausted_for({"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "1s"}) is None
