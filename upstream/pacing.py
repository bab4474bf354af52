"""Pure: how fast a deployment may be called, and who goes next. No I/O, no clock of its own
(every function is given `now`), so the store (`upstream/budgets.py`) can apply it inside one
transaction and the tests can drive it with Hypothesis.

**The budget** is a virtual schedule (GCRA, the generic cell rate algorithm): `next_free` is
the earliest time the next call may start; granting a call moves it on by 1/rate. A call whose
start lies within its lane's horizon is granted (the caller sleeps until then); one further
off is deferred and comes back later without holding a place, so a late interactive request
is not queued behind a flood of background work that reserved the future.

**Lanes.** An interactive (foreground) call may reserve up to `INTERACTIVE_HORIZON` ahead, a
background one only `BACKGROUND_HORIZON`: while background work keeps the schedule busy, an
interactive request still finds a slot within a fraction of a second.

**Fairness.** A deferred call is told when to come back by its project's own clock in its
lane, which moves on by 1/rate per deferral: each project's waiting calls return spread out,
one per slot, so a project with 300 waiting does not stand in front of one with 1.

**The rate** is the file's `rpm` where given, and learned where not: a 429 cuts the rate to
`DECREASE` of what was being sent (or to what the provider's headers say) and blocks calls
until its `retry-after` (as a successful answer whose `x-ratelimit-remaining-requests` is 0
blocks them until its reset); from then on the rate grows back by `growth_per_second` (additive
increase, as congestion control probes). A deployment that has not been limited for
`FORGET_AFTER_SECONDS` is unlimited again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

Lane = Literal["interactive", "background"]

INTERACTIVE_HORIZON = 2.0
BACKGROUND_HORIZON = 0.5
MIN_RATE = 0.2
"""Requests a second a learned rate never goes below (one every five seconds)."""
MAX_LEARNED_RATE = 10_000.0
DECREASE = 0.7
"""A 429 cuts the rate to this share of what was being sent."""
DECREASE_SPACING_SECONDS = 1.0
"""429s within this long of a cut are the same overload: they cut once."""
FORGET_AFTER_SECONDS = 600.0
MAX_BLOCK_SECONDS = 300.0


def horizon(lane: Lane) -> float:
    return INTERACTIVE_HORIZON if lane == "interactive" else BACKGROUND_HORIZON


@dataclass(frozen=True)
class Limits:
    """What the registry fixes for a deployment (requests and tokens a second)."""

    rate: float | None = None
    token_rate: float | None = None


@dataclass(frozen=True)
class BudgetState:
    """One deployment's shared budget, as the store keeps it (times in epoch seconds)."""

    next_free: float = 0.0
    next_free_tokens: float = 0.0
    learned_rate: float | None = None
    """Requests a second right after the last cut; None: nothing learned (or forgotten)."""
    decreased_at: float = 0.0
    blocked_until: float = 0.0


@dataclass(frozen=True)
class Grant:
    """Call after `wait_seconds` (within the lane's horizon)."""

    wait_seconds: float


@dataclass(frozen=True)
class Defer:
    """No slot near enough: come back after `wait_seconds`, holding no place."""

    wait_seconds: float


Decision = Grant | Defer


def growth_per_second(learned: float) -> float:
    return max(1.0, 0.05 * learned)


def learned_rate(state: BudgetState, now: float) -> float | None:
    """The learned rate now: the cut, grown back since."""
    if state.learned_rate is None or now - state.decreased_at > FORGET_AFTER_SECONDS:
        return None
    grown = state.learned_rate + growth_per_second(state.learned_rate) * max(0.0, now - state.decreased_at)
    return min(grown, MAX_LEARNED_RATE)


def rate(state: BudgetState, limits: Limits, now: float) -> float | None:
    """Requests a second allowed now; None: no limit is known."""
    known = [each for each in (limits.rate, learned_rate(state, now)) if each]
    return min(known) if known else None


def is_limited(state: BudgetState, limits: Limits, now: float) -> bool:
    """Whether calls must be paced through the shared budget now."""
    return rate(state, limits, now) is not None or limits.token_rate is not None or state.blocked_until > now


def earliest_start(state: BudgetState, limits: Limits, now: float) -> float:
    start = max(now, state.blocked_until)
    if rate(state, limits, now) is not None:
        start = max(start, state.next_free)
    if limits.token_rate is not None:
        start = max(start, state.next_free_tokens)
    return start


RETURNING_SPREAD_SLOTS = 4.0
"""A call deferred again is told to come back within this many slots after the schedule's
frontier, at random, so those displaced together do not come back together."""


def reserve(
    state: BudgetState,
    limits: Limits,
    now: float,
    lane: Lane,
    project_next: float,
    *,
    returning: bool = False,
    spread: float = 0.0,
) -> tuple[Decision, BudgetState, float]:
    """Grant a slot within the lane's horizon, or defer to the project's next turn in its
    lane. Returns the decision, the budget after it, and the project's clock after it.

    `returning`: the call comes back from a wait and found its slot taken (a 429's block, an
    interactive request): it keeps its place near the front (`spread`, 0 to 1, says where among
    the next few slots) rather than joining the back of its project's turn."""
    start = earliest_start(state, limits, now)
    allowed = rate(state, limits, now)
    if start - now <= horizon(lane):
        after = replace(state, next_free=start + 1.0 / allowed) if allowed else state
        return Grant(wait_seconds=start - now), after, project_next
    spacing = 1.0 / allowed if allowed else 0.1
    if returning:
        come_back = start - horizon(lane) + spacing * RETURNING_SPREAD_SLOTS * spread
        return Defer(wait_seconds=come_back - now), state, project_next
    come_back = max(project_next, start - horizon(lane))
    return Defer(wait_seconds=come_back - now), state, come_back + spacing


def charge_tokens(state: BudgetState, limits: Limits, now: float, tokens: int) -> BudgetState:
    """After a call: the tokens it used push the token schedule on (a `tpm` deployment)."""
    if limits.token_rate is None or tokens <= 0:
        return state
    return replace(state, next_free_tokens=max(state.next_free_tokens, now) + tokens / limits.token_rate)


def rate_limited(
    state: BudgetState,
    limits: Limits,
    now: float,
    *,
    retry_after: float | None,
    sending_rate: float | None,
    provider_rate: float | None = None,
) -> BudgetState:
    """A 429: cut the rate (once per overload) and block until the provider's `retry-after`.
    `sending_rate`: what this process saw succeed lately, for a deployment with no rate yet;
    `provider_rate`: the limit the provider's headers state, which is taken as it is."""
    blocked = max(state.blocked_until, now + min(max(retry_after or 0.0, 0.0), MAX_BLOCK_SECONDS))
    if provider_rate:
        return replace(state, learned_rate=max(MIN_RATE, provider_rate), decreased_at=now, blocked_until=blocked)
    current = learned_rate(state, now)
    if current is not None and now - state.decreased_at < DECREASE_SPACING_SECONDS:
        return replace(state, blocked_until=blocked)
    base = current or limits.rate or sending_rate or MIN_RATE
    if limits.rate:
        base = min(base, limits.rate)
    return replace(state, learned_rate=max(MIN_RATE, base * DECREASE), decreased_at=now, blocked_until=blocked)


def blocked(state: BudgetState, now: float, seconds: float) -> BudgetState:
    """The provider takes no request for `seconds` (its headers said none is left)."""
    return replace(state, blocked_until=max(state.blocked_until, now + min(max(seconds, 0.0), MAX_BLOCK_SECONDS)))


def estimated_wait(state: BudgetState, limits: Limits, now: float, lane: Lane, project_next: float) -> float:
    """How long a new call in `lane` would wait for its slot (the API's admission check)."""
    start = earliest_start(state, limits, now)
    if start - now <= horizon(lane):
        return max(0.0, start - now)
    return max(project_next, start - horizon(lane)) - now + horizon(lane)
